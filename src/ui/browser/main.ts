// The data browser (docs/data-browser.md): asks for a key, kept in this tab's sessionStorage and sent
// in Authorization (never in the page's URL), lists the entities with their counts, and shows the
// one named in the URL's fragment (#Task) in a RecordsView.

import { ApiClient, messageOf } from "./api-client.ts";
import { mayDo, type EntityDecl, type KeyKind } from "./declarations.ts";
import { fill, h } from "./dom.ts";
import { collectionPath } from "./record-form.ts";
import { RecordsView } from "./records-view.ts";
import { wordKeyRefusal } from "./wording.ts";

const KEY_STORAGE = "tabula.apiKey";

interface Session {
  readonly client: ApiClient;
  readonly kind: KeyKind;
  readonly entities: readonly EntityDecl[];
  readonly counts: Map<string, HTMLElement>;
  view: RecordsView | null;
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

async function openSession(apiKey: string): Promise<void> {
  if (apiKey === "") return showKeyForm("Paste a key first.");
  const client = new ApiClient(apiKey);
  try {
    const answer = await client.call<EntityDecl[]>("GET", "/api/entities");
    sessionStorage.setItem(KEY_STORAGE, apiKey);
    session = { client, kind: keyKindOf(answer.headers), entities: answer.body, counts: new Map(), view: null };
    showBrowser(session);
  } catch (error) {
    sessionStorage.removeItem(KEY_STORAGE);
    showKeyForm(wordKeyRefusal(error));
  }
}

/** The server names the key's kind beside the entities; a server that does not is shown as publishable, the kind that may do less. */
function keyKindOf(headers: Headers): KeyKind {
  return headers.get("X-Api-Key-Kind") === "secret" ? "secret" : "publishable";
}

function forgetKey(): void {
  session?.view?.destroy();
  session = null;
  sessionStorage.removeItem(KEY_STORAGE);
  showKeyForm();
}

function showBrowser(current: Session): void {
  fill(sessionBox, h("span", { class: `badge key-${current.kind}` }, `${current.kind} key`), h("button", { type: "button", onclick: forgetKey }, "Forget key"));
  sessionBox.hidden = false;
  if (current.entities.length === 0) return fill(app, h("p", { class: "notice" }, "The schema declares no entities."));
  const items = current.entities.map((entity) => {
    const count = h("span", { class: "count" }, "…");
    current.counts.set(entity.name, count);
    const link = h("a", { href: `#${encodeURIComponent(entity.name)}`, "data-entity": entity.name }, h("span", { class: "name" }, entity.name), count);
    return h("li", {}, link);
  });
  fill(app, h("div", { class: "layout" }, h("nav", { class: "entities", "aria-label": "Entities" }, h("h2", {}, "Entities"), h("ul", {}, ...items)), h("div", { id: "view" })));
  for (const entity of current.entities) void refreshCount(current, entity);
  showEntity(current);
}

/** The entity the fragment names, else the first. */
function showEntity(current: Session): void {
  const name = decodeURIComponent(location.hash.slice(1));
  const entity = current.entities.find((candidate) => candidate.name === name) ?? current.entities[0]!;
  for (const link of app.querySelectorAll<HTMLAnchorElement>("nav.entities a")) {
    if (link.dataset.entity === entity.name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  current.view?.destroy();
  const view = new RecordsView({ client: current.client, kind: current.kind, entity, onWrite: () => void refreshCount(current, entity) });
  current.view = view;
  fill(document.getElementById("view")!, view.element);
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
  if (session) showEntity(session);
});

const saved = sessionStorage.getItem(KEY_STORAGE);
if (saved) void openSession(saved);
else showKeyForm();
