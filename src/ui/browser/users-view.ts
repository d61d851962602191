// The Users page (docs/data-browser.md, "Users"; the API in docs/users.md): the people who sign in,
// with an invitation, a role change, disable and enable, and ending a user's sessions, each followed
// by reading the list again. The API decides who may (the secret key or an admin user): its
// refusals are shown in its words; a 401 (this tab's session or key gone) is handed to main.ts.

import { ApiFailure, type ApiClient } from "./api-client.ts";
import { fill, h } from "./dom.ts";
import { openKeyDialog } from "./key-dialogs.ts";
import { utcMinuteOf } from "./time-words.ts";
import { wordRefusal } from "./wording.ts";

/** A user as GET /api/users and GET /api/entities/User/me answer it. */
export interface UserView {
  readonly id: string;
  readonly email: string;
  readonly full_name: string | null;
  readonly role: string;
  readonly disabled: boolean;
  readonly is_verified: boolean;
  readonly created_date: string;
}

export interface UsersContext {
  readonly client: ApiClient;
  /** The signed-in user's id, marked "you" in the list; null for the secret key. */
  readonly selfId: string | null;
  onUnauthorized(): void;
  /** The signed-in user's own role was changed here: main.ts reads it again (the page may no longer be its). */
  onSelfChanged(): void;
}

/** The roles every app knows (docs/users.md); any other string is a role too, typed into the box. */
const KNOWN_ROLES = ["user", "admin"];

export class UsersView {
  readonly element: HTMLElement;
  private users: UserView[] = [];
  private loadNumber = 0;

  private readonly emailInput = h("input", { id: "invite-email", name: "user_email", type: "email", autocomplete: "off", spellcheck: "false", placeholder: "ada@example.com", "aria-describedby": "invite-error" });
  private readonly roleInput = h("input", { id: "invite-role", name: "role", type: "text", list: "user-roles", autocomplete: "off", value: "user" });
  private readonly inviteError = h("p", { id: "invite-error", class: "field-error", role: "alert" });
  private readonly inviteForm = h(
    "form",
    { class: "filters", "aria-label": "Invite a user", novalidate: true, onsubmit: (event: Event) => (event.preventDefault(), void this.invite()) },
    h("div", { class: "filter wide" }, h("label", { for: "invite-email" }, "Email"), this.emailInput),
    h("div", { class: "filter" }, h("label", { for: "invite-role" }, "Role"), this.roleInput),
    h("button", { type: "submit", class: "primary" }, "Invite"),
    this.inviteError,
  );
  private readonly roleList = h("datalist", { id: "user-roles" });
  private readonly status = h("div", { class: "status", role: "status" });
  private readonly tableBox = h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Users" });

  constructor(private readonly ctx: UsersContext) {
    this.element = h(
      "section",
      { class: "users", "aria-labelledby": "users-title" },
      h("div", { class: "records-head" }, h("h2", { id: "users-title" }, "Users"), h("div", { class: "head-actions" }, h("button", { type: "button", onclick: () => (this.say(""), void this.refresh()) }, "Refresh"))),
      h("p", { class: "muted small" }, "The people who sign in with an email and a password. An invited person signs up with the code sent to them."),
      this.inviteForm,
      this.roleList,
      this.status,
      this.tableBox,
    );
    void this.refresh();
  }

  destroy(): void {
    this.loadNumber++;
  }

  private async refresh(): Promise<void> {
    const number = ++this.loadNumber;
    try {
      const answer = await this.ctx.client.call<UserView[]>("GET", "/api/users");
      if (number !== this.loadNumber) return;
      this.users = answer.body;
      this.inviteForm.hidden = false;
    } catch (error) {
      if (number !== this.loadNumber || this.isUnauthorized(error)) return;
      this.say(wordRefusal(error));
      // Reached by its URL without the right to it: the API's 403 says why, and nothing is offered.
      // Any other trouble (the server gone, say) leaves the list read before.
      if (!(error instanceof ApiFailure && error.status === 403)) return;
      this.users = [];
      this.inviteForm.hidden = true;
    }
    const roles = new Set([...KNOWN_ROLES, ...this.users.map((user) => user.role)]);
    fill(this.roleList, ...[...roles].map((role) => h("option", { value: role })));
    this.renderTable();
  }

  private renderTable(): void {
    const head = h("tr", {}, ...["Email", "Name", "Role", "Disabled", "Verified", "Created"].map((title) => h("th", { scope: "col" }, title)), h("th", { scope: "col", class: "actions" }, h("span", { class: "visually-hidden" }, "Actions")));
    const body = h("tbody", {}, ...this.users.map((user) => this.renderRow(user)));
    if (this.users.length === 0) body.append(h("tr", {}, h("td", { colspan: 7, class: "empty" }, this.inviteForm.hidden ? "Nothing to show: only the secret key or an admin user may list users." : "No users yet.")));
    fill(this.tableBox, h("table", {}, h("thead", {}, head), body));
  }

  private renderRow(user: UserView): HTMLTableRowElement {
    const isSelf = user.id === this.ctx.selfId;
    const path = `/api/users/${encodeURIComponent(user.id)}`;
    const button = (label: string, text: string, onclick: () => void, isDanger = false) => h("button", { type: "button", class: isDanger ? "danger" : undefined, "aria-label": `${label} ${user.email}`, onclick }, text);
    const disable = () =>
      this.confirm(`Disable ${user.email}?`, "Every session of this user ends now, and it cannot sign in until it is enabled again. Its records stay.", isSelf, "Disable", async () => {
        await this.ctx.client.call("PATCH", path, { body: { disabled: true } });
        return `Disabled ${user.email}: its sessions have ended.`;
      });
    const enable = async () => {
      await this.ctx.client.call("PATCH", path, { body: { disabled: false } });
      return `Enabled ${user.email}: it may sign in again.`;
    };
    const endSessions = () =>
      this.confirm(`End the sessions of ${user.email}?`, "The user is signed out everywhere, and signs in again with its password.", isSelf, "End sessions", async () => {
        const ended = (await this.ctx.client.call<{ sessions_ended: number }>("DELETE", `${path}/sessions`)).body.sessions_ended;
        return `Ended ${ended} session${ended === 1 ? "" : "s"} of ${user.email}.`;
      });
    return h(
      "tr",
      { "data-user-id": user.id, class: user.disabled ? "is-deleted" : undefined },
      h("td", { "data-column": "email", title: user.email }, user.email, isSelf ? h("span", { class: "badge", title: "The user this tab is signed in as" }, "you") : null),
      h("td", { "data-column": "full_name" }, user.full_name ?? ""),
      h("td", { "data-column": "role" }, h("span", { class: "badge" }, user.role)),
      h("td", { "data-column": "disabled" }, user.disabled ? "yes" : "no"),
      h("td", { "data-column": "verified" }, user.is_verified ? "yes" : "not yet"),
      h("td", { "data-column": "created", title: user.created_date }, utcMinuteOf(user.created_date)),
      h(
        "td",
        { class: "actions" },
        h(
          "div",
          { class: "row-actions" },
          button("Change the role of", "Role…", () => this.askRole(user, path, isSelf)),
          user.disabled ? button("Enable", "Enable", () => void this.act(enable)) : button("Disable", "Disable", disable, true),
          button("End the sessions of", "End sessions", endSessions, true),
        ),
      ),
    );
  }

  private async invite(): Promise<void> {
    this.say("");
    const email = this.emailInput.value.trim();
    let problem = email === "" ? "Write the email of the person to invite." : "";
    if (problem === "") {
      try {
        const answer = await this.ctx.client.call<{ email: string; role: string }>("POST", "/api/users/invite-user", { body: { user_email: email, role: this.roleInput.value.trim() || "user" } });
        this.emailInput.value = "";
        this.say(`Invited ${answer.body.email} as ${answer.body.role}: they sign up with this email and the code sent to them.`);
        void this.refresh();
      } catch (error) {
        if (this.isUnauthorized(error)) return;
        problem = error instanceof ApiFailure && error.details.field === "user_email" ? "That is not an email address: write it as name@example.com." : wordRefusal(error);
      }
    }
    this.inviteError.textContent = problem;
    if (problem === "") return this.emailInput.removeAttribute("aria-invalid");
    this.emailInput.setAttribute("aria-invalid", "true");
    this.emailInput.focus();
  }

  private askRole(user: UserView, path: string, isSelf: boolean): void {
    this.say("");
    const role = h("input", { id: "user-role", name: "role", type: "text", list: "user-roles", autocomplete: "off", value: user.role });
    openKeyDialog({
      title: `Role of ${user.email}`,
      body: [
        h("div", { class: "field" }, h("label", { for: "user-role" }, "Role"), role),
        h("p", { class: "muted small" }, "admin manages users; user is the default; the app's rules may name others."),
        isSelf ? h("p", { class: "field-error" }, "This is you: without admin, this tab loses the Users page.") : null,
      ],
      confirm: "Change role",
      onConfirm: () => {
        const chosen = role.value.trim();
        if (chosen === "" || chosen === user.role) return;
        void this.act(async () => {
          await this.ctx.client.call("PATCH", path, { body: { role: chosen } });
          // This tab's own role: main.ts reads the user again, and offers what the new role may.
          if (isSelf) return (this.ctx.onSelfChanged(), null);
          return `${user.email} is now ${chosen}.`;
        });
      },
    });
  }

  /** Asks before `run`; `isSelf` warns that this tab's own session ends with it. */
  private confirm(title: string, words: string, isSelf: boolean, confirm: string, run: () => Promise<string>): void {
    this.say("");
    const selfWords = isSelf ? h("p", { class: "field-error" }, "This is you: this tab is signed out too.") : null;
    openKeyDialog({ title, body: [h("p", {}, words), selfWords], confirm, isDanger: true, onConfirm: () => void this.act(run) });
  }

  /** Runs a change, says what it did and reads the list again; a refusal is said instead. Null: nothing more to do here. */
  private async act(run: () => Promise<string | null>): Promise<void> {
    try {
      const done = await run();
      if (done === null) return;
      this.say(done);
      await this.refresh();
    } catch (error) {
      if (!this.isUnauthorized(error)) this.say(wordRefusal(error));
    }
  }

  /** A 401 means this tab's session or key is gone (its own sessions ended here, say): main.ts asks again. */
  private isUnauthorized(error: unknown): boolean {
    if (!(error instanceof ApiFailure) || error.code !== "unauthorized") return false;
    this.ctx.onUnauthorized();
    return true;
  }

  /** A message about the last action, until the next (an empty message ends it). */
  private say(message: string): void {
    if (message === "") fill(this.status);
    else fill(this.status, h("p", {}, message));
  }
}
