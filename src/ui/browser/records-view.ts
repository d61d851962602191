// One entity's records in a table (docs/api.md, docs/query-language.md): sort by a column header, q and search, cursor or
// skip paging by the Link header the API sends, counts by X-Total-Count, deleted=include|only for
// secret keys; delete, restore and delete-many by ids; and the current page read again whenever
// the change feed reports a write, its changed rows marked.

import { ApiFailure, type ApiClient } from "./api-client.ts";
import { cellText, columnsOf, exampleFilterOf, isSortable, mayDo, type EntityDecl, type KeyKind } from "./declarations.ts";
import { fill, h } from "./dom.ts";
import { followChanges, type LiveFeed, type LiveState } from "./live-feed.ts";
import { collectionPath, openCreateForm, openEditForm, type ApiRecord, type FormContext } from "./record-form.ts";
import { wordFilterRefusal, wordRefusal } from "./wording.ts";

export const PAGE_SIZE = 25;
const DEFAULT_SORT = "-created_date";
/** Writes reported together are read in one page request. */
const REFRESH_DELAY_MS = 80;
/** How long a row changed by a write stays marked. */
const CHANGED_MARK_MS = 2500;

export interface ViewContext {
  readonly client: ApiClient;
  readonly kind: KeyKind;
  readonly entity: EntityDecl;
  /** A write may have changed the entity's count in the list of entities. */
  onWrite(): void;
}

type DeletedChoice = "" | "include" | "only";

const LIVE_WORDS: { readonly [state in LiveState]: string } = {
  live: "Live: writes appear as they happen",
  reconnecting: "Reconnecting to the change feed…",
  stopped: "Live updates are off: the change feed refused this key",
};

export class RecordsView {
  readonly element: HTMLElement;
  private sort = DEFAULT_SORT;
  private deleted: DeletedChoice = "";
  /** The query of each page walked to; the last is the page shown. */
  private pages: string[] = [];
  private nextQuery: string | null = null;
  private total: number | null = null;
  /** The filters the rows answer, or "refused": the last ones asked for were refused, and no rows are shown. */
  private answered: { readonly isFiltered: boolean } | "refused" = { isFiltered: false };
  private rows: ApiRecord[] = [];
  private deletedIds = new Set<string>();
  private readonly selected = new Set<string>();
  private readonly changed = new Set<string>();
  /** Answers to requests older than the latest are dropped: the table shows what was asked last. */
  private loadNumber = 0;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  /** Whether a page is being read: a live refresh waits for it, rather than answering over it. */
  private isLoading = false;
  private readonly feed: LiveFeed;

  private readonly searchInput = h("input", { type: "search", id: "records-search", autocomplete: "off", placeholder: "text in any text field" });
  private readonly example: string;
  private readonly qInput = h("input", { type: "text", id: "records-q", class: "mono", autocomplete: "off", spellcheck: "false", "aria-describedby": "records-q-error" });
  private readonly deletedSelect = h("select", { id: "records-deleted" }, h("option", { value: "" }, "live"), h("option", { value: "include" }, "live and deleted"), h("option", { value: "only" }, "deleted only"));
  private readonly listError = h("p", { id: "records-q-error", class: "field-error", role: "alert" });
  private readonly status = h("div", { class: "status", role: "status" });
  private readonly liveState = h("span", { class: "live", "data-state": "reconnecting" }, LIVE_WORDS.reconnecting);
  private readonly bulkButton = h("button", { type: "button", class: "danger", disabled: true, onclick: () => void this.deleteSelected() }, "Delete selected (0)");
  private readonly tableBox = h("div", { class: "table-wrap", tabindex: 0, role: "region", onscroll: () => this.showMoreColumns() });
  private readonly scrollHint = h("p", { class: "scroll-hint muted small", hidden: true });
  private readonly resizeObserver = new ResizeObserver(() => this.showMoreColumns());
  private readonly pager = h("nav", { class: "pager", "aria-label": "Pages" });

  constructor(private readonly ctx: ViewContext) {
    this.tableBox.setAttribute("aria-label", `${ctx.entity.name} records`);
    this.example = exampleFilterOf(ctx.entity);
    this.qInput.placeholder = this.example;
    this.element = h("section", { class: "records", "aria-labelledby": "records-title" }, this.renderHead(), this.renderFilters(), this.status, this.scrollHint, this.tableBox, this.pager);
    this.resizeObserver.observe(this.tableBox);
    this.feed = followChanges(ctx.entity.name, ctx.client.credential, (id) => this.noteChange(id), (state) => this.showLiveState(state));
    void this.applyFilters();
  }

  private renderHead(): HTMLElement {
    const { entity, kind } = this.ctx;
    // Delete-many is for secret keys only (docs/api.md).
    const hasBulkDelete = kind === "secret" && mayDo(entity, kind, "delete");
    return h(
      "div",
      { class: "records-head" },
      h("h2", { id: "records-title" }, entity.name),
      this.liveState,
      h(
        "div",
        { class: "head-actions" },
        h("button", { type: "button", onclick: () => (this.say(""), void this.refresh()) }, "Refresh"),
        hasBulkDelete ? this.bulkButton : null,
        mayDo(entity, kind, "create") ? h("button", { type: "button", class: "primary", onclick: () => (this.say(""), openCreateForm(this.formContext())) }, "New record") : null,
      ),
    );
  }

  private renderFilters(): HTMLFormElement {
    return h(
      "form",
      { class: "filters", role: "search", onsubmit: (event: Event) => (event.preventDefault(), this.say(""), void this.applyFilters()) },
      h("div", { class: "filter" }, h("label", { for: "records-search" }, "Search"), this.searchInput),
      h("div", { class: "filter wide" }, h("label", { for: "records-q" }, "Filter ", h("code", {}, "q"), " (JSON)"), this.qInput),
      // deleted= is for secret keys only (docs/api.md): a publishable key is not offered it.
      this.ctx.kind === "secret" ? h("div", { class: "filter" }, h("label", { for: "records-deleted" }, "Records"), this.deletedSelect) : null,
      h("button", { type: "submit" }, "Apply"),
      this.listError,
    );
  }

  destroy(): void {
    this.feed.close();
    this.resizeObserver.disconnect();
    clearTimeout(this.refreshTimer);
    this.loadNumber++;
  }

  private formContext(): FormContext {
    return {
      client: this.ctx.client,
      entity: this.ctx.entity,
      onSaved: (record, isCreated) => {
        this.say(`${isCreated ? "Created" : "Saved"} ${this.ctx.entity.name} ${record.id}.`);
        this.markChanged(record.id);
        this.afterWrite();
      },
    };
  }

  /** The first page of what the filters, the sort and the deleted choice ask for. */
  private async applyFilters(focusColumn?: string): Promise<void> {
    const params = new URLSearchParams();
    if (this.sort !== DEFAULT_SORT) params.set("sort_by", this.sort);
    const q = this.qInput.value.trim();
    if (q !== "") params.set("q", q);
    if (this.searchInput.value !== "") params.set("search", this.searchInput.value);
    const deleted = this.ctx.kind === "secret" ? (this.deletedSelect.value as DeletedChoice) : "";
    if (deleted !== "") params.set("deleted", deleted);
    params.set("limit", String(PAGE_SIZE));
    params.set("count", "true");
    const query = params.toString();
    const number = this.loadNumber + 1;
    if (await this.show(query, deleted)) {
      this.pages = [query];
      this.deleted = deleted;
      this.answered = { isFiltered: q !== "" || params.has("search") || deleted !== "" };
    } else if (number === this.loadNumber) {
      // Refused: the rows of the filters before would look like this answer, so none are kept.
      this.pages = [];
      this.rows = [];
      this.total = null;
      this.nextQuery = null;
      this.answered = "refused";
    } else {
      return; // a later request took over
    }
    this.selected.clear();
    this.renderTable(focusColumn);
  }

  private async nextPage(): Promise<void> {
    this.say("");
    const query = this.nextQuery;
    if (query !== null && (await this.show(query, this.deleted))) this.pages.push(query);
    this.renderTable();
    (this.pager.querySelector<HTMLButtonElement>("button[data-page=next]:not(:disabled)") ?? this.pager.querySelector("button"))?.focus();
  }

  private async previousPage(): Promise<void> {
    this.say("");
    const query = this.pages[this.pages.length - 2];
    if (query !== undefined && (await this.show(query, this.deleted))) this.pages.pop();
    this.renderTable();
    (this.pager.querySelector<HTMLButtonElement>("button[data-page=previous]:not(:disabled)") ?? this.pager.querySelector("button"))?.focus();
  }

  /** The page shown, read again. */
  private async refresh(): Promise<void> {
    const query = this.pages[this.pages.length - 1];
    if (query === undefined) return this.applyFilters();
    if (await this.show(query, this.deleted)) this.renderTable();
  }

  /** Reads a page; on success keeps its rows, total and next page, else shows the API's refusal. */
  private async show(query: string, deleted: DeletedChoice): Promise<boolean> {
    const number = ++this.loadNumber;
    const path = collectionPath(this.ctx.entity);
    this.isLoading = true;
    try {
      const answer = await this.ctx.client.call<ApiRecord[]>("GET", `${path}?${query}`);
      const deletedIds = await this.findDeleted(answer.body, deleted);
      if (number !== this.loadNumber) return false;
      const total = answer.headers.get("X-Total-Count");
      if (total !== null) this.total = Number(total);
      this.rows = answer.body;
      this.deletedIds = deletedIds;
      this.nextQuery = nextQueryOf(answer.headers.get("Link"));
      this.listError.textContent = "";
      this.qInput.removeAttribute("aria-invalid");
      return true;
    } catch (error) {
      if (number !== this.loadNumber) return false;
      this.listError.textContent = wordFilterRefusal(error, this.ctx.entity, this.qInput.value.trim(), this.example);
      if (error instanceof ApiFailure && (error.details.parameter === "q" || ["invalid_json", "invalid_filter", "unknown_field"].includes(error.code))) this.qInput.setAttribute("aria-invalid", "true");
      return false;
    } finally {
      if (number === this.loadNumber) this.isLoading = false;
    }
  }

  /** Records carry no deleted mark; with deleted=include the page's deleted ones are asked for by id. */
  private async findDeleted(rows: readonly ApiRecord[], deleted: DeletedChoice): Promise<Set<string>> {
    if (deleted === "only") return new Set(rows.map((row) => row.id));
    if (deleted === "" || rows.length === 0) return new Set();
    const q = JSON.stringify({ id: { $in: rows.map((row) => row.id) } });
    const params = new URLSearchParams({ deleted: "only", limit: String(rows.length), q });
    const answer = await this.ctx.client.call<ApiRecord[]>("GET", `${collectionPath(this.ctx.entity)}?${params}`);
    return new Set(answer.body.map((row) => row.id));
  }

  private sortBy(column: string): void {
    const isDescending = this.sort.startsWith("-");
    const current = isDescending ? this.sort.slice(1) : this.sort;
    this.sort = current === column ? (isDescending ? column : `-${column}`) : column;
    this.say("");
    void this.applyFilters(column);
  }

  private renderTable(focusColumn?: string): void {
    const { entity, kind } = this.ctx;
    const columns = columnsOf(entity, kind);
    const hasSelection = kind === "secret" && mayDo(entity, kind, "delete");
    const sortField = this.sort.replace(/^-/, "");
    const direction = this.sort.startsWith("-") ? "descending" : "ascending";
    const isPageSelected = this.rows.length > 0 && this.rows.every((row) => this.selected.has(row.id));
    const head = h(
      "tr",
      {},
      hasSelection ? h("th", { scope: "col", class: "select" }, h("input", { type: "checkbox", "aria-label": "Select every record of this page", checked: isPageSelected, onchange: (event: Event) => this.selectPage((event.target as HTMLInputElement).checked) })) : null,
      ...columns.map((column) => {
        if (!isSortable(entity, column)) return h("th", { scope: "col" }, column);
        const isSorted = column === sortField;
        return h(
          "th",
          { scope: "col", "aria-sort": isSorted ? direction : "none" },
          h("button", { type: "button", class: "sort", "data-column": column, onclick: () => this.sortBy(column) }, column, h("span", { class: "arrow", "aria-hidden": "true" }, isSorted ? (direction === "ascending" ? " ▲" : " ▼") : "")),
        );
      }),
      h("th", { scope: "col", class: "actions" }, h("span", { class: "visually-hidden" }, "Actions")),
    );
    const body = h("tbody", {}, ...this.rows.map((row) => this.renderRow(row, columns, hasSelection)));
    if (this.rows.length === 0) body.append(h("tr", {}, h("td", { colspan: columns.length + 2, class: "empty" }, this.emptyWords())));
    fill(this.tableBox, h("table", {}, h("thead", {}, head), body));
    this.showMoreColumns();
    if (focusColumn) this.tableBox.querySelector<HTMLButtonElement>(`button[data-column="${CSS.escape(focusColumn)}"]`)?.focus();
    this.renderPager();
    this.bulkButton.textContent = `Delete selected (${this.selected.size})`;
    this.bulkButton.disabled = this.selected.size === 0;
  }

  private renderRow(row: ApiRecord, columns: readonly string[], hasSelection: boolean): HTMLTableRowElement {
    const { entity, kind } = this.ctx;
    const isDeleted = this.deletedIds.has(row.id);
    const actions: HTMLElement[] = [];
    if (isDeleted) {
      if (kind === "secret") actions.push(h("button", { type: "button", "aria-label": `Restore ${row.id}`, onclick: () => void this.restore(row.id) }, "Restore"));
    } else {
      if (mayDo(entity, kind, "update")) actions.push(h("button", { type: "button", "aria-label": `Edit ${row.id}`, onclick: () => void this.edit(row.id) }, "Edit"));
      if (mayDo(entity, kind, "delete")) actions.push(h("button", { type: "button", class: "danger", "aria-label": `Delete ${row.id}`, onclick: () => void this.deleteOne(row.id) }, "Delete"));
    }
    const className = [isDeleted ? "is-deleted" : "", this.changed.has(row.id) ? "is-changed" : ""].join(" ").trim();
    return h(
      "tr",
      { "data-id": row.id, class: className || undefined },
      hasSelection ? h("td", { class: "select" }, isDeleted ? null : h("input", { type: "checkbox", "aria-label": `Select ${row.id}`, checked: this.selected.has(row.id), onchange: (event: Event) => this.select(row.id, (event.target as HTMLInputElement).checked) })) : null,
      ...columns.map((column) => {
        const text = cellText(row[column]);
        // The id is cut short on screen (title shows it whole); selecting it copies it whole.
        if (column === "id") return h("td", { class: "id", title: text }, h("code", {}, ...idParts(text)), isDeleted ? h("span", { class: "badge" }, "deleted") : null);
        const file = uploadedFileOf(text);
        if (file !== null) return h("td", { title: text, "data-column": column }, fileCell(file));
        return h("td", { title: text.length > 40 ? text : undefined, "data-column": column }, text);
      }),
      h("td", { class: "actions" }, h("div", { class: "row-actions" }, ...actions)),
    );
  }

  private emptyWords(): string {
    if (this.answered === "refused") return "Nothing to show: the filter above was refused.";
    if (this.total !== 0 || this.pages.length !== 1) return "No records on this page.";
    return this.answered.isFiltered ? "No records match." : `No ${this.ctx.entity.name} records yet.`;
  }

  /**
   * Marks the table's sides that have columns out of sight (data-more="left right"): the row's
   * buttons cast a shadow over the columns passing under them, and a hint says the table scrolls.
   */
  private showMoreColumns(): void {
    const box = this.tableBox;
    const more = [box.scrollLeft > 1 ? "left" : "", box.scrollLeft + box.clientWidth < box.scrollWidth - 1 ? "right" : ""].filter(Boolean).join(" ");
    if (more === "") box.removeAttribute("data-more");
    else box.dataset.more = more;
    // Kept in place (only emptied) while the table is wider than its box, so the table never jumps.
    this.scrollHint.hidden = more === "";
    this.scrollHint.textContent = more.split(" ").includes("right") ? "Scroll sideways for more columns →" : "";
  }

  private renderPager(): void {
    const index = this.pages.length - 1;
    const first = index * PAGE_SIZE + 1;
    const last = index * PAGE_SIZE + this.rows.length;
    const range = this.answered === "refused" ? "" : this.rows.length === 0 ? "No records" : this.total === null ? `Records ${first}–${last}` : `Records ${first}–${last} of ${this.total}`;
    fill(
      this.pager,
      h("button", { type: "button", "data-page": "previous", disabled: index <= 0, onclick: () => void this.previousPage() }, "← Previous"),
      h("span", { class: "range", "aria-live": "polite" }, range),
      h("button", { type: "button", "data-page": "next", disabled: this.nextQuery === null, onclick: () => void this.nextPage() }, "Next →"),
    );
  }

  private select(id: string, isSelected: boolean): void {
    if (isSelected) this.selected.add(id);
    else this.selected.delete(id);
    this.bulkButton.textContent = `Delete selected (${this.selected.size})`;
    this.bulkButton.disabled = this.selected.size === 0;
  }

  private selectPage(isSelected: boolean): void {
    for (const row of this.rows) if (!this.deletedIds.has(row.id)) this.select(row.id, isSelected);
    for (const box of this.tableBox.querySelectorAll<HTMLInputElement>("tbody input[type=checkbox]")) box.checked = isSelected;
  }

  private async edit(id: string): Promise<void> {
    this.say("");
    try {
      await openEditForm(this.formContext(), id);
    } catch (error) {
      this.say(wordRefusal(error));
    }
  }

  private async deleteOne(id: string): Promise<void> {
    try {
      await this.ctx.client.call("DELETE", `${collectionPath(this.ctx.entity)}/${encodeURIComponent(id)}`);
      // A delete is soft (docs/api.md): a secret key can take it back at once.
      const undo = this.ctx.kind === "secret" ? h("button", { type: "button", onclick: () => void this.restore(id) }, "Restore it") : undefined;
      this.say(`Deleted ${this.ctx.entity.name} ${id}.`, undo);
      this.afterWrite();
    } catch (error) {
      this.say(wordRefusal(error));
    }
  }

  private async restore(id: string): Promise<void> {
    try {
      await this.ctx.client.call("PUT", `${collectionPath(this.ctx.entity)}/${encodeURIComponent(id)}/restore`);
      this.say(`Restored ${this.ctx.entity.name} ${id}.`);
      this.markChanged(id);
      this.afterWrite();
    } catch (error) {
      this.say(wordRefusal(error));
    }
  }

  /** Delete-many by ids (docs/api.md): the filter {"id": {"$in": [...]}} as q. */
  private async deleteSelected(): Promise<void> {
    const ids = [...this.selected];
    if (ids.length === 0) return;
    const q = JSON.stringify({ id: { $in: ids } });
    try {
      const answer = await this.ctx.client.call<{ count: number }>("DELETE", `${collectionPath(this.ctx.entity)}?${new URLSearchParams({ q })}`);
      this.selected.clear();
      this.say(`Deleted ${answer.body.count} ${this.ctx.entity.name} record${answer.body.count === 1 ? "" : "s"}.`);
      this.afterWrite();
    } catch (error) {
      this.say(wordRefusal(error));
    }
  }

  private afterWrite(): void {
    void this.refresh();
    this.ctx.onWrite();
  }

  /** A message about the last action, until the next (an empty message ends it). */
  private say(message: string, action?: HTMLElement): void {
    if (message === "") fill(this.status);
    else fill(this.status, h("p", {}, message, action ? " " : null, action ?? null));
  }

  private noteChange(id: string): void {
    this.markChanged(id);
    this.scheduleRefresh();
  }

  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      if (this.isLoading) return this.scheduleRefresh();
      void this.refresh();
      this.ctx.onWrite();
    }, REFRESH_DELAY_MS);
  }

  private markChanged(id: string): void {
    this.changed.add(id);
    setTimeout(() => {
      this.changed.delete(id);
      this.tableBox.querySelector(`tr[data-id="${CSS.escape(id)}"]`)?.classList.remove("is-changed");
    }, CHANGED_MARK_MS);
  }

  private showLiveState(state: LiveState): void {
    this.liveState.dataset.state = state;
    this.liveState.textContent = LIVE_WORDS[state];
  }
}

/** The next page's query, from Link: <URL>; rel="next" (a cursor, or skip for other sorts), counted again. */
function nextQueryOf(link: string | null): string | null {
  const match = link === null ? null : /<([^>]*)>\s*;\s*rel="next"/.exec(link);
  if (!match) return null;
  const params = new URL(match[1]!, location.href).searchParams;
  params.set("count", "true");
  return params.toString();
}

/**
 * A generated id in two halves, each shown by its end (page.css cuts them at the start): the first
 * half is the time it was made, which records made together share but for its last digits; the
 * second tells apart records made in the same millisecond. The text is whole, so a copy is too.
 */
function idParts(id: string): Array<HTMLElement | string> {
  if (!/^[0-9a-f]{24}$/.test(id)) return [id];
  return [h("span", { class: "id-time" }, id.slice(0, 12)), h("span", { class: "id-tail" }, id.slice(12))];
}

/** A public file of this server (an UploadFile's file_url): its URL and name, else null. */
function uploadedFileOf(text: string): { url: string; name: string } | null {
  if (!text.includes("/api/files/")) return null;
  let url: URL;
  try {
    url = new URL(text, location.href);
  } catch {
    return null;
  }
  const match = /^\/api\/files\/[0-9a-f]{32}\/([^/]+)$/.exec(url.pathname);
  if (url.origin !== location.origin || match === null) return null;
  return { url: url.href, name: decodeURIComponent(match[1]!) };
}

/** A picture shows small, beside its name; any other file is a link by its name. */
function fileCell(file: { url: string; name: string }): HTMLElement {
  const link = h("a", { href: file.url, target: "_blank", rel: "noopener" }, file.name);
  if (!/\.(png|jpe?g|gif|webp|avif)$/i.test(file.name)) return link;
  return h("span", { class: "file" }, h("img", { src: file.url, alt: "", loading: "lazy", class: "thumb" }), link);
}
