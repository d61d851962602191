// Where webhook endpoints are kept (docs/webhooks.md): one value of the store's metadata vault
// ("webhooks"), written atomically with the store's batches, so it is as durable as records (the
// file store's log and snapshots) and, on PostgreSQL, shared by every process. A change reads the
// value afresh and writes it back under Store.exclusively, so processes changing endpoints at once
// take turns; each process reads it again every POLL_MS to see the others' changes.

import type { BatchWriter, MetadataStore, MetaWrite } from "../store/store.ts";
import type { Progress, StoredEndpoint } from "./endpoints.ts";

const ENDPOINTS_KEY = "webhooks";
/** On a store shared by processes, how often the endpoints are read again (as keys are: store/postgres/key-vault.ts). */
export const POLL_MS = 500;

export function progressKey(id: string): string {
  return `webhook:${id}`;
}

export interface BookChange<T> {
  /** The endpoints to keep; null leaves them as they are. */
  readonly endpoints: readonly StoredEndpoint[] | null;
  readonly value: T;
  /** More metadata written in the same batch (an endpoint's progress, removed with it). */
  readonly meta?: readonly MetaWrite[];
}

export class WebhookBook {
  private endpoints: readonly StoredEndpoint[] = [];
  /** The value as last read or written: a poll that finds the same changes nothing. */
  private seen = "[]";
  private readonly listeners: Array<() => void> = [];
  private poller: NodeJS.Timeout | null = null;

  static async open(store: MetadataStore & BatchWriter, warn: (message: string) => void): Promise<WebhookBook> {
    const book = new WebhookBook(store, warn);
    book.take(await book.read());
    // Only a store shared by processes (it numbers them) can be changed behind this one's back.
    if (store.idNode !== null) book.poller = setInterval(() => void book.poll(), POLL_MS).unref();
    return book;
  }

  private constructor(
    private readonly store: MetadataStore & BatchWriter,
    private readonly warn: (message: string) => void,
  ) {}

  list(): readonly StoredEndpoint[] {
    return this.endpoints;
  }

  get(id: string): StoredEndpoint | undefined {
    return this.endpoints.find((endpoint) => endpoint.id === id);
  }

  /** Called after the endpoints changed, here or (seen by a poll) in another process. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Reads the endpoints as stored and writes what `change` makes of them, with no other process's change between. */
  change<T>(change: (stored: readonly StoredEndpoint[]) => BookChange<T>): Promise<T> {
    return this.store.exclusively("webhook-endpoints", async () => {
      const made = change(await this.read());
      const meta = [...(made.endpoints ? [{ key: ENDPOINTS_KEY, value: made.endpoints }] : []), ...(made.meta ?? [])];
      if (meta.length > 0) await this.store.commit({ puts: [], meta });
      if (made.endpoints) this.take(made.endpoints);
      return made.value;
    });
  }

  /** An endpoint's progress as its deliverer last wrote it. */
  async progress(id: string): Promise<Progress | undefined> {
    return ((await this.store.meta(progressKey(id))) as Progress | undefined) ?? undefined;
  }

  close(): void {
    if (this.poller) clearInterval(this.poller);
  }

  private async read(): Promise<readonly StoredEndpoint[]> {
    return ((await this.store.meta(ENDPOINTS_KEY)) as StoredEndpoint[] | undefined) ?? [];
  }

  private take(endpoints: readonly StoredEndpoint[]): void {
    const text = JSON.stringify(endpoints);
    if (text === this.seen) return;
    this.seen = text;
    this.endpoints = endpoints;
    for (const listener of this.listeners) listener();
  }

  private async poll(): Promise<void> {
    try {
      this.take(await this.read());
    } catch (error) {
      // The database away: the endpoints stay as last read, and the next poll tries again.
      this.warn(`Webhook endpoints could not be read from the store: ${(error as Error).message}`);
    }
  }
}
