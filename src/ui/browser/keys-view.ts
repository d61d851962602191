// The Keys page (docs/data-browser.md, "Keys"; the API in docs/api.md, "Managing keys"): the
// server's keys listed by prefix, never in full; a new or rolled key shown once, with a copy
// button; roll and revoke behind a dialog. The API decides who may: its refusals are shown in its
// words; a 401 (this tab's key revoked or expired) is handed to main.ts, which asks for another key.

import type { KeyView } from "../../views.ts";
import { ApiFailure, type ApiClient } from "./api-client.ts";
import { fill, h } from "./dom.ts";
import { openKeyDialog, showNewKey, type NewKeyAnswer } from "./key-dialogs.ts";
import { expiryWords, lastUsedWords, utcMinuteOf } from "./time-words.ts";
import { wordRefusal } from "./wording.ts";

export interface KeysContext {
  readonly client: ApiClient;
  /** The API refused this tab's key (401): it was revoked, or expired, since the page opened. */
  onUnauthorized(): void;
}

/** A rolled key lives on this long unless the dialog is told otherwise, as the API's default (docs/api.md). */
const DEFAULT_ROLL_HOURS = 24;
/** Relative words ("expires in 3 min") are brought up to date this often, without asking the server. */
const REDRAW_MS = 30_000;
/** The list is read again this long after a key's expiry, by when the server has dropped it. */
const EXPIRY_SLACK_MS = 1000;
/** setTimeout's longest delay; an expiry further off is met by a later redraw or refresh. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const SOURCE_WORDS: { readonly [source in KeyView["source"]]: string } = {
  stored: "Made through the API, the keys command or at first start; kept hashed by the server.",
  flag: "Given by --secret-key, --publishable-key or their environment variables: restart the server without it to remove it.",
  process: "Made for this server process alone; it ends when the process does.",
};

export class KeysView {
  readonly element: HTMLElement;
  private keys: KeyView[] = [];
  private isRefused = false;
  private loadNumber = 0;
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly redrawTimer = setInterval(() => this.redraw(), REDRAW_MS);

  private readonly kindSelect = h("select", { id: "new-key-kind", name: "kind" }, h("option", { value: "publishable" }, "publishable"), h("option", { value: "secret" }, "secret"));
  private readonly nameInput = h("input", { id: "new-key-name", name: "name", type: "text", autocomplete: "off", maxlength: 100, placeholder: "who or what uses it", "aria-describedby": "new-key-error" });
  private readonly expiresInput = h("input", { id: "new-key-expires", name: "expires_at", type: "datetime-local", step: 60, "aria-describedby": "new-key-error" });
  private readonly createError = h("p", { id: "new-key-error", class: "field-error", role: "alert" });
  private readonly createForm = this.renderCreateForm();
  private readonly newKeySlot = h("div", { class: "new-key-slot" });
  private readonly status = h("div", { class: "status", role: "status" });
  private readonly tableBox = h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "API keys" });

  constructor(private readonly ctx: KeysContext) {
    this.element = h(
      "section",
      { class: "keys", "aria-labelledby": "keys-title" },
      h("div", { class: "records-head" }, h("h2", { id: "keys-title" }, "Keys"), h("div", { class: "head-actions" }, h("button", { type: "button", onclick: () => (this.say(""), void this.refresh()) }, "Refresh"))),
      h("p", { class: "muted small" }, "Every key this server accepts, by its first characters: the server keeps only a hash of each. A new key is shown once, when it is made."),
      this.createForm,
      this.newKeySlot,
      this.status,
      this.tableBox,
    );
    void this.refresh();
  }

  destroy(): void {
    clearInterval(this.redrawTimer);
    clearTimeout(this.expiryTimer);
    this.loadNumber++;
  }

  private renderCreateForm(): HTMLFormElement {
    return h(
      "form",
      { class: "filters key-create", "aria-label": "New key", onsubmit: (event: Event) => (event.preventDefault(), void this.create()) },
      h("div", { class: "filter" }, h("label", { for: "new-key-kind" }, "Kind"), this.kindSelect),
      h("div", { class: "filter wide" }, h("label", { for: "new-key-name" }, "Name"), this.nameInput),
      h("div", { class: "filter" }, h("label", { for: "new-key-expires" }, "Expires ", h("span", { class: "hint" }, "(UTC, optional)")), this.expiresInput),
      h("button", { type: "submit", class: "primary" }, "Create key"),
      this.createError,
    );
  }

  private async refresh(): Promise<void> {
    const number = ++this.loadNumber;
    try {
      const answer = await this.ctx.client.call<KeyView[]>("GET", "/api/keys");
      if (number !== this.loadNumber) return;
      this.keys = [...answer.body].sort(compareKeys);
      this.isRefused = false;
    } catch (error) {
      if (number !== this.loadNumber || this.isUnauthorized(error)) return;
      this.say(wordRefusal(error));
      // A publishable key that reached this page by its URL: the API's 403 says why, and there is nothing to offer.
      // Any other trouble (the server gone, say) leaves the list read before.
      if (!(error instanceof ApiFailure && error.status === 403)) return;
      this.keys = [];
      this.isRefused = true;
    }
    this.createForm.hidden = this.isRefused;
    this.renderTable();
    this.armExpiry();
  }

  /** The relative words brought up to date; not under the keyboard's focus, which a redraw would lose. */
  private redraw(): void {
    if (!this.tableBox.contains(document.activeElement)) this.renderTable();
  }

  private renderTable(): void {
    const now = Date.now();
    const head = h("tr", {}, ...["Name", "Kind", "Prefix", "Source", "Created", "Last used", "Expires"].map((title) => h("th", { scope: "col" }, title)), h("th", { scope: "col", class: "actions" }, h("span", { class: "visually-hidden" }, "Actions")));
    const tabKey = this.tabKey();
    const body = h("tbody", {}, ...this.keys.map((key) => this.renderRow(key, key === tabKey, now)));
    if (this.keys.length === 0) body.append(h("tr", {}, h("td", { colspan: 8, class: "empty" }, this.isRefused ? "Nothing to show: this key may not list keys." : "No keys listed.")));
    fill(this.tableBox, h("table", {}, h("thead", {}, head), body));
  }

  private renderRow(key: KeyView, isTabKey: boolean, now: number): HTMLTableRowElement {
    const label = `${key.name} (${key.prefix}…)`;
    const actions =
      key.source === "stored"
        ? [
            h("button", { type: "button", "aria-label": `Roll ${label}`, onclick: () => this.askRoll(key) }, "Roll"),
            h("button", { type: "button", class: "danger", "aria-label": `Revoke ${label}`, onclick: () => this.askRevoke(key, isTabKey) }, "Revoke"),
          ]
        : // The API refuses these (409 key_not_managed): no button that can only be refused.
          [h("span", { class: "muted small", title: SOURCE_WORDS[key.source] }, key.source === "flag" ? "set at start" : "this process")];
    const expiry = key.expires_at === null ? "" : expiryWords(key.expires_at, now);
    const used = key.last_used === null ? "" : lastUsedWords(key.last_used, now);
    return h(
      "tr",
      { "data-key-id": key.id, class: expiry === "expired" ? "is-deleted" : undefined },
      h("td", { "data-column": "name", title: key.name }, key.name, isTabKey ? h("span", { class: "badge", title: "The key this tab was opened with" }, "this tab") : null),
      h("td", { "data-column": "kind" }, h("span", { class: `badge key-${key.kind}` }, key.kind)),
      h("td", { "data-column": "prefix" }, h("code", {}, `${key.prefix}…`)),
      h("td", { "data-column": "source", title: SOURCE_WORDS[key.source] }, key.source),
      h("td", { "data-column": "created", title: key.created ?? "" }, key.created === null ? "—" : utcMinuteOf(key.created)),
      h("td", { "data-column": "last_used", title: key.last_used ?? "" }, key.last_used === null ? "never" : utcMinuteOf(key.last_used), used ? h("span", { class: "when muted small" }, used) : null),
      h("td", { "data-column": "expires_at", title: key.expires_at ?? "" }, key.expires_at === null ? "never" : utcMinuteOf(key.expires_at), expiry ? h("span", { class: "when muted small" }, expiry) : null),
      h("td", { class: "actions" }, h("div", { class: "row-actions" }, ...actions)),
    );
  }

  /** The listed key this tab uses, told by its prefix when no other key shares it. */
  private tabKey(): KeyView | undefined {
    const matches = this.keys.filter((key) => this.ctx.client.credential?.startsWith(key.prefix));
    return matches.length === 1 ? matches[0] : undefined;
  }

  private async create(): Promise<void> {
    this.say("");
    this.createError.textContent = "";
    for (const input of [this.nameInput, this.expiresInput]) input.removeAttribute("aria-invalid");
    const body: Record<string, string> = { kind: this.kindSelect.value, name: this.nameInput.value.trim() };
    // datetime-local has no zone: its text is read as UTC, as the label says and the list shows.
    const expires = this.expiresInput.value;
    if (expires !== "") body.expires_at = Number.isNaN(Date.parse(`${expires}Z`)) ? expires : new Date(`${expires}Z`).toISOString();
    try {
      const answer = await this.ctx.client.call<NewKeyAnswer>("POST", "/api/keys", { body });
      this.nameInput.value = "";
      this.expiresInput.value = "";
      this.showNew(answer.body, `New ${answer.body.kind} key “${answer.body.name}”`, null);
    } catch (error) {
      if (this.isUnauthorized(error)) return;
      this.createError.textContent = wordRefusal(error);
      const field = error instanceof ApiFailure ? error.details.field : undefined;
      const input = field === "name" ? this.nameInput : field === "expires_at" ? this.expiresInput : null;
      input?.setAttribute("aria-invalid", "true");
      input?.focus();
    }
  }

  private askRoll(key: KeyView): void {
    this.say("");
    const amount = h("input", { id: "roll-for", name: "expires_in", type: "number", min: 0, step: "any", value: DEFAULT_ROLL_HOURS });
    const unit = h(
      "select",
      { id: "roll-unit", "aria-label": "Unit" },
      h("option", { value: 1 }, "seconds"),
      h("option", { value: 60 }, "minutes"),
      h("option", { value: 3600, selected: true }, "hours"),
      h("option", { value: 86400 }, "days"),
    );
    openKeyDialog({
      title: `Roll “${key.name}” (${key.prefix}…)`,
      body: [
        h("p", {}, `A new ${key.kind} key named “${key.name}” is made, and shown once. The old key keeps working for the time below, so that what uses it can move to the new one; then it is refused.`),
        h("div", { class: "field" }, h("label", { for: "roll-for" }, "The old key keeps working for"), h("div", { class: "roll-for" }, amount, unit)),
        h("p", { class: "muted small" }, "0 ends it at once."),
      ],
      confirm: "Roll",
      onConfirm: () => void this.roll(key, amount.value === "" ? undefined : Math.round(Number(amount.value) * Number(unit.value))),
    });
  }

  private async roll(key: KeyView, expiresInS: number | undefined): Promise<void> {
    try {
      const answer = await this.ctx.client.call<NewKeyAnswer>("POST", `/api/keys/${encodeURIComponent(key.id)}/roll`, { body: expiresInS === undefined ? {} : { expires_in: expiresInS } });
      this.showNew(answer.body, `New ${answer.body.kind} key “${answer.body.name}”, the successor of ${key.prefix}…`, answer.body.rolled ?? null);
    } catch (error) {
      if (!this.isUnauthorized(error)) this.say(wordRefusal(error));
    }
  }

  private askRevoke(key: KeyView, isTabKey: boolean): void {
    this.say("");
    openKeyDialog({
      title: `Revoke “${key.name}” (${key.prefix}…)?`,
      body: [
        h("p", {}, "Requests with this key are refused from now on (within a second on every server sharing this store), and its open change feeds end. It cannot be undone."),
        isTabKey ? h("p", { class: "field-error" }, "This tab was opened with this key: the page will ask for another one.") : null,
      ],
      confirm: "Revoke",
      isDanger: true,
      onConfirm: () => void this.revoke(key),
    });
  }

  private async revoke(key: KeyView): Promise<void> {
    try {
      await this.ctx.client.call("DELETE", `/api/keys/${encodeURIComponent(key.id)}`);
      this.say(`Revoked “${key.name}” (${key.prefix}…).`);
      await this.refresh();
    } catch (error) {
      // The last secret key, or a key given by flag: the API says why, and what to do instead.
      if (!this.isUnauthorized(error)) this.say(wordRefusal(error));
    }
  }

  private showNew(made: NewKeyAnswer, title: string, rolled: NewKeyAnswer["rolled"] | null): void {
    const oldWords = rolled?.expires_at ? `The old key (${rolled.prefix}…) keeps working until ${utcMinuteOf(rolled.expires_at)}${relative(rolled.expires_at)}, then is refused.` : null;
    fill(this.newKeySlot, showNewKey(made.key, title, oldWords, () => fill(this.newKeySlot)));
    void this.refresh();
  }

  /** A 401 means this tab's key is gone: main.ts asks for another. */
  private isUnauthorized(error: unknown): boolean {
    if (!(error instanceof ApiFailure) || error.code !== "unauthorized") return false;
    this.ctx.onUnauthorized();
    return true;
  }

  /** Reads the list again just after the next expiry, when the server has dropped that key. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const now = Date.now();
    const next = Math.min(...this.keys.map((key) => (key.expires_at === null ? Infinity : Date.parse(key.expires_at))).filter((time) => time > now));
    if (next === Infinity || next - now > MAX_TIMER_MS) return;
    this.expiryTimer = setTimeout(() => void this.refresh(), next - now + EXPIRY_SLACK_MS);
  }

  /** A message about the last action, until the next (an empty message ends it). */
  private say(message: string): void {
    if (message === "") fill(this.status);
    else fill(this.status, h("p", {}, message));
  }
}

/** Secret keys first, then by name; a name's keys newest first, so that a rolled key's successor tops its predecessor. */
function compareKeys(a: KeyView, b: KeyView): number {
  if (a.kind !== b.kind) return a.kind === "secret" ? -1 : 1;
  const byName = a.name.localeCompare(b.name);
  if (byName !== 0) return byName;
  return (b.created ?? "").localeCompare(a.created ?? "") || a.id.localeCompare(b.id);
}

function relative(expiresAt: string): string {
  const words = expiryWords(expiresAt, Date.now());
  return words.startsWith("expires ") ? ` (${words.slice("expires ".length)})` : "";
}
