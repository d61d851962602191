// The data browser (docs/data-browser.md): asks for a key, or a user's email and password; keeps the
// key, or the user's token, in this tab's sessionStorage and sends it in Authorization (never in the
// page's URL); lists the entities with their counts, and shows the one named in the URL's fragment
// (#Task) in a RecordsView, or a page of the server (#/keys, #/webhooks, #/users: "/" is in no
// entity's name, docs/entities.md) in its view.

import { ApiClient, ApiFailure, messageOf } from "./api-client.ts";
import { mayDo, type EntityDecl, type KeyKind } from "./declarations.ts";
import { fill, h } from "./dom.ts";
import { KeysView } from "./keys-view.ts";
import { WebhooksView } from "./webhooks-view.ts";
import { collectionPath } from "./record-form.ts";
import { RecordsView } from "./records-view.ts";
import { renderSignIn, type SignInSpec } from "./sign-in-form.ts";
import { UsersView, type UserView } from "./users-view.ts";
import { KEY_GONE, SESSION_GONE, wordKeyRefusal, wordRefusal, wordSignInRefusal } from "./wording.ts";

const KEY_STORAGE = "tabula.apiKey";
/** A signed-in user's access token, kept as the key is: in this tab only, gone when it closes. */
const TOKEN_STORAGE = "tabula.accessToken";
/** The server's pages by their fragment: "/" is in no entity's name, so none of them names an entity. */
const PAGES = { keys: "#/keys", webhooks: "#/webhooks", users: "#/users" } as const;
type ServerPage = keyof typeof PAGES;

/** How this tab got in: an API key, or a user's token from auth/login. */
type Credential = { readonly apiKey: string } | { readonly token: string };
type SignInWords = Omit<SignInSpec, "onKey" | "onUser">;

interface Session {
  readonly credential: Credential;
  readonly client: ApiClient;
  readonly kind: KeyKind;
  /** The signed-in user, as GET /api/entities/User/me answered; null with an API key. */
  readonly user: UserView | null;
  readonly entities: readonly EntityDecl[];
  readonly counts: Map<string, HTMLElement>;
  view: RecordsView | KeysView | WebhooksView | UsersView | null;
}

const app = document.getElementById("app")!;
const sessionBox = document.getElementById("session")!;
let session: Session | null = null;

function showSignIn(words: SignInWords = {}): void {
  sessionBox.hidden = true;
  const { element, focus } = renderSignIn({ ...words, onKey: (apiKey) => void openSession({ apiKey }), onUser: (email, password) => void signIn(email, password) });
  fill(app, element);
  focus.focus();
}

async function signIn(email: string, password: string): Promise<void> {
  if (email === "" || password === "") return showSignIn({ email, userError: email === "" ? "Write the email you signed up with." : "Write your password too." });
  let token: string;
  try {
    token = (await new ApiClient(null).call<{ access_token: string }>("POST", "/api/auth/login", { body: { email, password } })).body.access_token;
  } catch (error) {
    return showSignIn({ email, userError: wordSignInRefusal(error) });
  }
  await openSession({ token });
}

/** `isSaved`: what this tab kept, which worked before; refused now, it was revoked, expired or ended. */
async function openSession(credential: Credential, isSaved = false): Promise<void> {
  const isUser = "token" in credential;
  const secret = isUser ? credential.token : credential.apiKey;
  if (secret === "") return showSignIn({ keyError: "Paste a key first." });
  const client = new ApiClient(secret);
  try {
    const [entities, me] = await Promise.all([client.call<EntityDecl[]>("GET", "/api/entities"), isUser ? client.call<UserView>("GET", "/api/entities/User/me") : null]);
    // One way in per tab: keeping the one that worked drops the other.
    sessionStorage.removeItem(isUser ? KEY_STORAGE : TOKEN_STORAGE);
    sessionStorage.setItem(isUser ? TOKEN_STORAGE : KEY_STORAGE, secret);
    session = { credential, client, kind: keyKindOf(entities.headers), user: me?.body ?? null, entities: entities.body, counts: new Map(), view: null };
    showBrowser(session);
  } catch (error) {
    sessionStorage.removeItem(isUser ? TOKEN_STORAGE : KEY_STORAGE);
    if (!isUser) return showSignIn({ keyError: isSaved ? wordKeyRefusal(error, KEY_GONE) : wordKeyRefusal(error) });
    const isGone = error instanceof ApiFailure && error.code === "unauthorized";
    showSignIn({ userError: isGone ? SESSION_GONE : wordRefusal(error) });
  }
}

/** The server names the key's kind beside the entities; a server that does not is shown as publishable, the kind that may do less. */
function keyKindOf(headers: Headers): KeyKind {
  return headers.get("X-Api-Key-Kind") === "secret" ? "secret" : "publishable";
}

/** Drops this tab's key or token, and shows the sign-in screen with `words`. */
function dropSession(words: SignInWords = {}): void {
  session?.view?.destroy();
  session = null;
  sessionStorage.removeItem(KEY_STORAGE);
  sessionStorage.removeItem(TOKEN_STORAGE);
  showSignIn(words);
}

/** This tab's key or session refused (401) while the page is open. */
function dropRefused(current: Session): void {
  dropSession(current.user === null ? { keyError: KEY_GONE } : { userError: SESSION_GONE, email: current.user.email });
}

/** Ends the session on the server (auth/logout), then forgets its token here whatever the answer. */
async function signOut(current: Session, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  let note = "Signed out.";
  try {
    await current.client.call("POST", "/api/auth/logout");
  } catch (error) {
    // A 401: the session had ended already. Else the token is forgotten all the same, and the session lasts until it expires.
    if (!(error instanceof ApiFailure && error.code === "unauthorized")) note = `Signed out of this tab, but the server did not end the session (${wordRefusal(error)}); it ends when it expires.`;
  }
  dropSession({ note, email: current.user?.email });
}

function showBrowser(current: Session): void {
  fill(sessionBox, ...sessionWords(current));
  sessionBox.hidden = false;
  const items = current.entities.map((entity) => {
    const count = h("span", { class: "count" }, "…");
    current.counts.set(entity.name, count);
    const link = h("a", { href: `#${encodeURIComponent(entity.name)}`, "data-entity": entity.name }, h("span", { class: "name" }, entity.name), count);
    return h("li", {}, link);
  });
  // Keys and webhooks take a secret key; users the secret key or an admin user (docs/api.md,
  // docs/users.md): no one is offered a page the API would refuse it.
  const mayManageUsers = current.kind === "secret" || current.user?.role === "admin";
  const pages = [current.kind === "secret" && pageLink("keys", "Keys"), current.kind === "secret" && pageLink("webhooks", "Webhooks"), mayManageUsers && pageLink("users", "Users")].filter((link) => link !== false);
  const nav = h(
    "nav",
    { class: "entities", "aria-label": pages.length > 0 ? "Entities and server pages" : "Entities" },
    h("h2", {}, "Entities"),
    items.length > 0 ? h("ul", {}, ...items) : h("p", { class: "muted small" }, "None declared."),
    pages.length > 0 && h("h2", {}, "Server"),
    pages.length > 0 && h("ul", {}, ...pages.map((link) => h("li", {}, link))),
  );
  fill(app, h("div", { class: "layout" }, nav, h("div", { id: "view" })));
  for (const entity of current.entities) void refreshCount(current, entity);
  showView(current);
}

/** Who this tab is: the key's kind and Forget key, or the user's email and role and Sign out. */
function sessionWords(current: Session): Node[] {
  if (current.user === null) return [h("span", { class: `badge key-${current.kind}` }, `${current.kind} key`), h("button", { type: "button", onclick: () => dropSession() }, "Forget key")];
  const button = h("button", { type: "button", onclick: () => void signOut(current, button) }, "Sign out");
  return [h("span", { class: "who" }, "Signed in as ", h("strong", { "data-user-email": "" }, current.user.email)), h("span", { class: "badge", "data-user-role": "", title: "Role" }, current.user.role), button];
}

function pageLink(page: ServerPage, title: string): HTMLAnchorElement {
  return h("a", { href: PAGES[page], "data-page": page }, h("span", { class: "name" }, title));
}

/** The server's page the fragment names, else the entity it names, else the first. */
function showView(current: Session): void {
  current.view?.destroy();
  current.view = null;
  const page = (Object.keys(PAGES) as ServerPage[]).find((named) => PAGES[named] === location.hash) ?? null;
  const isServerPage = page !== null;
  const name = decodeURIComponent(location.hash.slice(1));
  const entity = isServerPage ? undefined : (current.entities.find((candidate) => candidate.name === name) ?? current.entities[0]);
  for (const link of app.querySelectorAll<HTMLAnchorElement>("nav.entities a")) {
    if (isServerPage ? link.dataset.page === page : link.dataset.entity === entity?.name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const box = document.getElementById("view")!;
  // A publishable key or a user may come here by the URL alone: the page asks all the same, and shows the API's 403.
  const onUnauthorized = () => dropRefused(current);
  if (page === "keys") current.view = new KeysView({ client: current.client, onUnauthorized });
  else if (page === "webhooks") current.view = new WebhooksView({ client: current.client, onUnauthorized });
  else if (page === "users") current.view = new UsersView({ client: current.client, selfId: current.user?.id ?? null, onUnauthorized, onSelfChanged: () => (current.view?.destroy(), void openSession(current.credential, true)) });
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

const savedKey = sessionStorage.getItem(KEY_STORAGE);
const savedToken = sessionStorage.getItem(TOKEN_STORAGE);
if (savedToken) void openSession({ token: savedToken }, true);
else if (savedKey) void openSession({ apiKey: savedKey }, true);
else showSignIn();
