// The data browser (docs/data-browser.md): asks for a key, kept in this tab's sessionStorage and sent
// in Authorization (never in the page's URL), lists the entities with their counts, and shows the
// one named in the URL's fragment (#Task) in a RecordsView, the Keys page (#/keys, which no
// entity's name can be) in a KeysView, or the Webhooks page (#/webhooks) in a WebhooksView.

import { ApiClient, messageOf } from "./api-client.ts";
import { mayDo, type EntityDecl, type KeyKind } from "./declarations.ts";
import { fill, h } from "./dom.ts";
import { KeysView } from "./keys-view.ts";
import { WebhooksView } from "./webhooks-view.ts";
import { collectionPath } from "./record-form.ts";
import { RecordsView } from "./records-view.ts";
import { KEY_GONE, wordKeyRefusal } from "./wording.ts";

const KEY_STORAGE = "tabula.apiKey";
/** The Keys page's fragment: "/" is in no entity's name (docs/entities.md), so it names no entity. */
const KEYS_HASH = "#/keys";
const WEBHOOKS_HASH = "#/webhooks";

interface Session {
  readonly client: ApiClient;
  readonly kind: KeyKind;
  readonly entities: readonly EntityDecl[];
  readonly counts: Map<string, HTMLElement>;
  view: RecordsView | KeysView | WebhooksView | null;
}

const app = document.getElementById("app")!;
const sessionBox = document.getElementById("session")!;
let session: Session | null = null;

function showKeyForm(message = ""): void {
  sessionBox.hidden = true;
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false", "aria-describedby": "api-key-help api-key-error" });
  const error = h("p", { id: "api-key-error", class: "field-error", role: "alert" }, message);
  const form = h(
    "form",
    { class: "key-form", onsubmit: (event: Event) => (event.preventDefault(), void openSession(input.value.trim())) },
    h("h2", {}, "Open with an API key"),
    h("label", { for: "api-key" }, "API key"),
    input,
    h(
      "p",
      { id: "api-key-help", class: "muted small" },
      "A secret key (sk_…) sees and does everything; a publishable key (pk_…) sees what an app's page may. tabula prints both when it starts. ",
      "The key stays in this tab (sessionStorage) and goes to this server only, in the Authorization header.",
    ),
    error,
    h("button", { type: "submit", class: "primary" }, "Open"),
  );
  fill(app, form);
  input.focus();
}

/** `isSaved`: the key this tab kept, which worked when it was pasted; refused now, it was revoked or expired. */
async function openSession(apiKey: string, isSaved = false): Promise<void> {
  if (apiKey === "") return showKeyForm("Paste a key first.");
  const client = new ApiClient(apiKey);
  try {
    const answer = await client.call<EntityDecl[]>("GET", "/api/entities");
    sessionStorage.setItem(KEY_STORAGE, apiKey);
    session = { client, kind: keyKindOf(answer.headers), entities: answer.body, counts: new Map(), view: null };
    showBrowser(session);
  } catch (error) {
    sessionStorage.removeItem(KEY_STORAGE);
    showKeyForm(isSaved ? wordKeyRefusal(error, KEY_GONE) : wordKeyRefusal(error));
  }
}

/** The server names the key's kind beside the entities; a server that does not is shown as publishable, the kind that may do less. */
function keyKindOf(headers: Headers): KeyKind {
  return headers.get("X-Api-Key-Kind") === "secret" ? "secret" : "publishable";
}

function forgetKey(message = ""): void {
  session?.view?.destroy();
  session = null;
  sessionStorage.removeItem(KEY_STORAGE);
  showKeyForm(message);
}

function showBrowser(current: Session): void {
  fill(sessionBox, h("span", { class: `badge key-${current.kind}` }, `${current.kind} key`), h("button", { type: "button", onclick: () => forgetKey() }, "Forget key"));
  sessionBox.hidden = false;
  const items = current.entities.map((entity) => {
    const count = h("span", { class: "count" }, "…");
    current.counts.set(entity.name, count);
    const link = h("a", { href: `#${encodeURIComponent(entity.name)}`, "data-entity": entity.name }, h("span", { class: "name" }, entity.name), count);
    return h("li", {}, link);
  });
  // Managing keys takes a secret key (docs/api.md): a publishable key is not offered the page.
  const keysLink = current.kind === "secret" ? h("a", { href: KEYS_HASH, "data-page": "keys" }, h("span", { class: "name" }, "Keys")) : null;
  const webhooksLink = current.kind === "secret" ? h("a", { href: WEBHOOKS_HASH, "data-page": "webhooks" }, h("span", { class: "name" }, "Webhooks")) : null;
  const nav = h(
    "nav",
    { class: "entities", "aria-label": keysLink ? "Entities and keys" : "Entities" },
    h("h2", {}, "Entities"),
    items.length > 0 ? h("ul", {}, ...items) : h("p", { class: "muted small" }, "None declared."),
    keysLink && h("h2", {}, "Server"),
    keysLink && h("ul", {}, h("li", {}, keysLink), h("li", {}, webhooksLink)),
  );
  fill(app, h("div", { class: "layout" }, nav, h("div", { id: "view" })));
  for (const entity of current.entities) void refreshCount(current, entity);
  showView(current);
}

/** The Keys page when the fragment names it, else the entity it names, else the first. */
function showView(current: Session): void {
  current.view?.destroy();
  current.view = null;
  const page = location.hash === KEYS_HASH ? "keys" : location.hash === WEBHOOKS_HASH ? "webhooks" : null;
  const isKeys = page !== null;
  const name = decodeURIComponent(location.hash.slice(1));
  const entity = isKeys ? undefined : (current.entities.find((candidate) => candidate.name === name) ?? current.entities[0]);
  for (const link of app.querySelectorAll<HTMLAnchorElement>("nav.entities a")) {
    if (isKeys ? link.dataset.page === page : link.dataset.entity === entity?.name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const box = document.getElementById("view")!;
  // A publishable key may come here by the URL alone: the page asks all the same, and shows the API's 403.
  if (page === "keys") current.view = new KeysView({ client: current.client, onUnauthorized: () => forgetKey(KEY_GONE) });
  else if (page === "webhooks") current.view = new WebhooksView({ client: current.client, onUnauthorized: () => forgetKey(KEY_GONE) });
  else if (entity) current.view = new RecordsView({ client: current.client, kind: current.kind, entity, onWrite: () => void refreshCount(current, entity) });
  if (current.view) fill(box, current.view.element);
  else fill(box, h("p", { class: "notice" }, "The schema declares no entities."));
}

async function refreshCount(current: Session, entity: EntityDecl): Promise<void> {
  const count = current.counts.get(entity.name)!;
  if (!mayDo(entity, current.kind, "read")) {
    count.textContent = "–";
    count.title = "This key may not read these records.";
    return;
  }
  try {
    const answer = await current.client.call<{ count: number }>("GET", `${collectionPath(entity)}/count`);
    count.textContent = String(answer.body.count);
    count.title = `${answer.body.count} record${answer.body.count === 1 ? "" : "s"}`;
  } catch (error) {
    count.textContent = "?";
    count.title = messageOf(error);
  }
}

window.addEventListener("hashchange", () => {
  if (session) showView(session);
});

const saved = sessionStorage.getItem(KEY_STORAGE);
if (saved) void openSession(saved, true);
else showKeyForm();
