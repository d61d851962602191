// The Webhooks page (docs/data-browser.md, "Webhooks"; the API in docs/webhooks.md): each endpoint
// with its state (active, retrying, disabled and why), its position in the change feed and its last
// attempts. It only reads: endpoints are made and changed through the API. The API decides who may:
// its refusals are shown in its words; a 401 is handed to main.ts, which asks for another key.

import type { Attempt, EndpointView } from "../../views.ts";
import { ApiFailure, type ApiClient } from "./api-client.ts";
import { fill, h } from "./dom.ts";
import { utcMinuteOf } from "./time-words.ts";
import { wordRefusal } from "./wording.ts";


export interface WebhooksContext {
  readonly client: ApiClient;
  onUnauthorized(): void;
}

/** Attempts shown under each endpoint; GET …/deliveries has the last 100. */
const SHOWN_ATTEMPTS = 5;
/** The page reads the endpoints again this often: deliveries move by themselves. */
const REFRESH_MS = 5000;

export class WebhooksView {
  readonly element: HTMLElement;
  private loadNumber = 0;
  private readonly status = h("div", { class: "status", role: "status" });
  private readonly listBox = h("div", { class: "webhooks-list" });
  private readonly timer = setInterval(() => void this.refresh(), REFRESH_MS);

  constructor(private readonly ctx: WebhooksContext) {
    this.element = h(
      "section",
      { class: "webhooks", "aria-labelledby": "webhooks-title" },
      h("div", { class: "records-head" }, h("h2", { id: "webhooks-title" }, "Webhooks"), h("div", { class: "head-actions" }, h("button", { type: "button", onclick: () => void this.refresh() }, "Refresh"))),
      h("p", { class: "muted small" }, "Each endpoint gets every change it follows, signed, in commit order, retried until it answers 2xx. Create and change them with POST and PATCH /api/webhooks (docs/webhooks.md)."),
      this.status,
      this.listBox,
    );
    void this.refresh();
  }

  destroy(): void {
    clearInterval(this.timer);
    this.loadNumber++;
  }

  private async refresh(): Promise<void> {
    const number = ++this.loadNumber;
    try {
      const endpoints = (await this.ctx.client.call<EndpointView[]>("GET", "/api/webhooks")).body;
      const attempts = await Promise.all(endpoints.map(async (endpoint) => (await this.ctx.client.call<Attempt[]>("GET", `/api/webhooks/${encodeURIComponent(endpoint.id)}/deliveries`)).body));
      if (number !== this.loadNumber) return;
      this.status.textContent = "";
      if (endpoints.length === 0) return fill(this.listBox, h("p", { class: "empty" }, "No webhook endpoints yet."));
      fill(this.listBox, ...endpoints.map((endpoint, index) => this.renderEndpoint(endpoint, attempts[index]!)));
    } catch (error) {
      if (number !== this.loadNumber) return;
      if (error instanceof ApiFailure && error.status === 401) return this.ctx.onUnauthorized();
      this.status.textContent = wordRefusal(error);
      if (error instanceof ApiFailure && error.status === 403) fill(this.listBox);
    }
  }

  private renderEndpoint(endpoint: EndpointView, attempts: readonly Attempt[]): HTMLElement {
    const follows = `${endpoint.entities === null ? "every entity" : endpoint.entities.join(", ")}: ${endpoint.events.join(", ")}${endpoint.q === null ? "" : `, where ${JSON.stringify(endpoint.q)}`}`;
    const why = endpoint.state === "disabled" ? (endpoint.disabled_reason ?? "Disabled through the API.") : endpoint.failing ? `${endpoint.failing.attempts} failed attempts; the next at ${utcMinuteOf(endpoint.failing.next_at)} UTC. Last: ${endpoint.failing.error}` : "";
    const rows = attempts.slice(0, SHOWN_ATTEMPTS).map((attempt) =>
      h(
        "tr",
        { class: attempt.error === null ? undefined : "is-failed" },
        h("td", { "data-column": "at", title: attempt.at }, utcMinuteOf(attempt.at)),
        h("td", { "data-column": "event" }, h("code", {}, attempt.event_id)),
        h("td", { "data-column": "status" }, attempt.status === null ? "—" : String(attempt.status)),
        h("td", { "data-column": "latency" }, `${attempt.latency_ms} ms`),
        h("td", { "data-column": "error", title: attempt.error ?? "" }, attempt.error ?? "delivered"),
      ),
    );
    const head = h("tr", {}, ...["At (UTC)", "Event", "Status", "Latency", "Result"].map((title) => h("th", { scope: "col" }, title)));
    return h(
      "article",
      { class: "webhook", "data-webhook-id": endpoint.id, "aria-label": endpoint.url },
      h("h3", {}, h("span", { class: `badge state-${endpoint.state}` }, endpoint.state), " ", h("code", { class: "url" }, endpoint.url)),
      endpoint.description ? h("p", {}, endpoint.description) : null,
      h("p", { class: "muted small" }, `Follows ${follows}. Delivered up to event ${endpoint.position}.`),
      why ? h("p", { class: "webhook-why", role: endpoint.state === "active" ? undefined : "note" }, why) : null,
      rows.length === 0 ? h("p", { class: "muted small" }, "No attempts yet.") : h("div", { class: "table-wrap" }, h("table", { "aria-label": `Last attempts to ${endpoint.url}` }, h("thead", {}, head), h("tbody", {}, ...rows))),
    );
  }
}
