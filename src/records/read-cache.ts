// A read by id answers from a view of the record cached by id: its JSON for the caller's kind of
// key, and its ETag. The store forgets a record's views whenever the record changes
// (Store.readCache), so a view found is the record as it stands.
//
// Why a table of flat strings: a record read at random among 100,000 finds what it touches cold,
// and on a VM each cold place costs microseconds (a cache miss and a walk of two levels of page
// tables). A Map of view objects cost a read five such places or more: the map's bucket, its
// entry, the id it is kept under, the view and each of its strings. Here a read touches two: the
// table's slot, which holds the id's hash, and one string that holds the id, the ETag and the JSON
// side by side, so a cached read costs a fraction of what a Map of view objects would.

import type { ReadCache, Row } from "../store/store.ts";
import type { Caller } from "../keys/caller.ts";
import { etagOf } from "./serialize.ts";

/** A record as one kind of key sees it, ready to send. */
export interface RecordView {
  readonly json: string;
  /** The JSON's length in UTF-8 bytes (the Content-Length). */
  readonly bytes: number;
  readonly etag: string;
}

export function viewOf(row: Row, json: string): RecordView {
  return viewFrom(json, Buffer.byteLength(json), etagOf(row));
}

/** The one place a view is made, so that views made and views found share one shape in V8. */
function viewFrom(json: string, bytes: number, etag: string): RecordView {
  return { json, bytes, etag };
}

/**
 * Views are kept for at most this many records and kinds of key (in all entities), and the view
 * cached longest ago goes first: about 45 MB for records of 300 bytes. A table of 100,000 records
 * read at random by one kind of key fits whole, so that such reads never miss.
 */
export const MAX_CACHED_VIEWS = 131_072;

/** Ids longer than this are not cached: a view's first character holds the id's length. */
const MAX_CACHED_ID_LENGTH = 255;

// A view's text, one flat string: [id length][flags][id][ETag][JSON]. Its flags are SECRET or
// PUBLISHABLE, plus ASCII_JSON when the JSON's length is its length in bytes, plus the ETag's
// length times ETAG_LENGTH_UNIT. Both characters stay below 256, so that the text takes a byte a
// character (V8 keeps a string of such characters one byte each).
const SECRET = 0;
const PUBLISHABLE = 2;
const ASCII_JSON = 1;
const ETAG_LENGTH_UNIT = 4;
const MAX_CACHED_ETAG_LENGTH = 63;
/** Where a view's id starts. */
const ID_AT = 2;

const FIRST_SLOTS = 1024;
/** Two array items per slot: the hash of id and kind (0: empty), and the view's text. */
const SLOT_WIDTH = 2;

/**
 * One entity's views: an open-addressing table (linear probing) whose slots hold a hash and a
 * view's text, at most half full. Store.readCache hands it to the store, which deletes by id.
 */
export class ViewCache implements ReadCache {
  private slots: Array<number | string> = [];
  private mask = 0;
  /** Views held: one per record and kind of key read. */
  size = 0;

  constructor() {
    this.allocate(FIRST_SLOTS);
  }

  /** The view of record `id` for `caller`'s kind of key, or undefined. */
  find(id: string, caller: Caller): RecordView | undefined {
    if (id.length > MAX_CACHED_ID_LENGTH) return undefined;
    const kind = kindOf(caller);
    const at = this.slotOf(id, kind, hashOf(id, kind));
    if (at < 0) return undefined;
    const text = this.slots[at + 1] as string;
    const flags = text.charCodeAt(1);
    const etagAt = ID_AT + id.length;
    const jsonAt = etagAt + Math.floor(flags / ETAG_LENGTH_UNIT);
    const etag = text.slice(etagAt, jsonAt);
    const json = text.slice(jsonAt);
    return viewFrom(json, (flags & ASCII_JSON) !== 0 ? text.length - jsonAt : Buffer.byteLength(json), etag);
  }

  /** Keeps `view` as what `caller`'s kind of key sees of record `id` as it stands. */
  keep(id: string, caller: Caller, view: RecordView): void {
    if (id.length > MAX_CACHED_ID_LENGTH || view.etag.length > MAX_CACHED_ETAG_LENGTH) return;
    const kind = kindOf(caller);
    const hash = hashOf(id, kind);
    const flags = kind | (view.bytes === view.json.length ? ASCII_JSON : 0) | (view.etag.length * ETAG_LENGTH_UNIT);
    // join, not +: a chain of + is a tree of strings; join makes one flat string, next to nothing else.
    const text = [String.fromCharCode(id.length, flags), id, view.etag, view.json].join("");
    const at = this.slotOf(id, kind, hash);
    if (at >= 0) {
      this.slots[at + 1] = text;
    } else {
      if ((this.size + 1) * 2 > this.slots.length / SLOT_WIDTH) this.allocate((this.slots.length / SLOT_WIDTH) * 2);
      this.place(hash, text);
      this.size++;
    }
    evictOldestFor(this, text);
  }

  delete(id: string): void {
    if (this.size === 0 || id.length > MAX_CACHED_ID_LENGTH) return;
    this.remove(id, SECRET);
    this.remove(id, PUBLISHABLE);
  }

  clear(): void {
    this.size = 0;
    this.allocate(FIRST_SLOTS);
  }

  /** Removes the view whose text this is, if still kept: a newer view of its record stays. */
  evict(text: string): void {
    const id = text.slice(ID_AT, ID_AT + text.charCodeAt(0));
    const kind = text.charCodeAt(1) & PUBLISHABLE;
    const at = this.slotOf(id, kind, hashOf(id, kind));
    if (at >= 0 && this.slots[at + 1] === text) this.removeAt(at);
  }

  /** The index in `slots` of the view of `id` for `kind`, or -1. */
  private slotOf(id: string, kind: number, hash: number): number {
    const slots = this.slots;
    for (let slot = hash & this.mask; ; slot = (slot + 1) & this.mask) {
      const at = slot * SLOT_WIDTH;
      const found = slots[at];
      if (found === 0) return -1;
      if (found === hash) {
        const text = slots[at + 1] as string;
        // indexOf, not startsWith: V8 inlines startsWith as a loop of single characters, twice
        // the cost; a different id at ID_AT lets indexOf search on, and find it later or not at all.
        if (text.charCodeAt(0) === id.length && (text.charCodeAt(1) & PUBLISHABLE) === kind && text.indexOf(id, ID_AT) === ID_AT) return at;
      }
    }
  }

  private remove(id: string, kind: number): void {
    const at = this.slotOf(id, kind, hashOf(id, kind));
    if (at >= 0) this.removeAt(at);
  }

  /**
   * Empties a slot, then moves back each view of the run after it that may sit there, so that
   * every view stays reachable from its hash's slot without a gap (no tombstones to sweep).
   */
  private removeAt(at: number): void {
    const slots = this.slots;
    const mask = this.mask;
    let hole = at / SLOT_WIDTH;
    for (let slot = (hole + 1) & mask; ; slot = (slot + 1) & mask) {
      const hash = slots[slot * SLOT_WIDTH] as number;
      if (hash === 0) break;
      // It may move to the hole when its own slot is not between the hole and it.
      if (((slot - (hash & mask)) & mask) >= ((slot - hole) & mask)) {
        slots[hole * SLOT_WIDTH] = hash;
        slots[hole * SLOT_WIDTH + 1] = slots[slot * SLOT_WIDTH + 1]!;
        hole = slot;
      }
    }
    slots[hole * SLOT_WIDTH] = 0;
    slots[hole * SLOT_WIDTH + 1] = 0;
    this.size--;
  }

  private place(hash: number, text: string): void {
    let slot = hash & this.mask;
    while (this.slots[slot * SLOT_WIDTH] !== 0) slot = (slot + 1) & this.mask;
    this.slots[slot * SLOT_WIDTH] = hash;
    this.slots[slot * SLOT_WIDTH + 1] = text;
  }

  /** Starts over with this many slots (a power of two), placing again the views held. */
  private allocate(slotCount: number): void {
    const old = this.slots;
    this.slots = new Array<number | string>(slotCount * SLOT_WIDTH).fill(0);
    this.mask = slotCount - 1;
    if (this.size === 0) return;
    for (let at = 0; at < old.length; at += SLOT_WIDTH) {
      if (old[at] !== 0) this.place(old[at] as number, old[at + 1] as string);
    }
  }
}

/** The bound: the views kept in all entities, in the order they were kept, overwritten in turn. */
const keptIn: Array<ViewCache | undefined> = [];
const keptTexts: string[] = [];
let nextKept = 0;

function evictOldestFor(cache: ViewCache, text: string): void {
  keptIn[nextKept]?.evict(keptTexts[nextKept]!);
  keptIn[nextKept] = cache;
  keptTexts[nextKept] = text;
  nextKept = (nextKept + 1) % MAX_CACHED_VIEWS;
}

function kindOf(caller: Caller): number {
  return caller.kind === "secret" ? SECRET : PUBLISHABLE;
}

/** FNV-1a over the id's characters and the kind, mixed (murmur3's finalizer): 1 to 2^30 - 1. */
function hashOf(id: string, kind: number): number {
  let hash = 0x811c9dc5 ^ kind;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  // A small integer (V8 keeps it unboxed in the slots array), never 0, which marks an empty slot.
  return hash >>> 2 || 1;
}
