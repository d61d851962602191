// The page's first screen (docs/data-browser.md, "Signing in"): an API key pasted, or a user's email
// and password. What is done with them, and where they are kept, is main.ts's; the words of a
// refusal are wording.ts's.

import { h } from "./dom.ts";

export interface SignInSpec {
  /** A refusal of the key box, or why this tab's key was dropped. */
  readonly keyError?: string;
  /** A refusal of the email and password, or why this tab's session ended. */
  readonly userError?: string;
  /** The email to fill in again after a refusal: only the password is typed again. */
  readonly email?: string;
  /** Said above both forms, such as "Signed out." */
  readonly note?: string;
  onKey(apiKey: string): void;
  onUser(email: string, password: string): void;
}

/** Both forms; the input to focus is the one the last refusal was about, else the key box. */
export function renderSignIn(spec: SignInSpec): { readonly element: HTMLElement; readonly focus: HTMLInputElement } {
  const apiKey = h("input", { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false", "aria-describedby": "api-key-help api-key-error" });
  const keyForm = h(
    "form",
    { class: "key-form", onsubmit: (event: Event) => (event.preventDefault(), spec.onKey(apiKey.value.trim())) },
    h("h2", {}, "Open with an API key"),
    h("label", { for: "api-key" }, "API key"),
    apiKey,
    h(
      "p",
      { id: "api-key-help", class: "muted small" },
      "A secret key (sk_…) sees and does everything; a publishable key (pk_…) sees what an app's page may. tabula prints both when it starts. ",
      "The key stays in this tab (sessionStorage) and goes to this server only, in the Authorization header.",
    ),
    h("p", { id: "api-key-error", class: "field-error", role: "alert" }, spec.keyError ?? ""),
    h("button", { type: "submit", class: "primary" }, "Open"),
  );

  // autocomplete names let a password manager fill them; the password is never kept by the page.
  const email = h("input", { id: "sign-in-email", type: "email", autocomplete: "username", spellcheck: "false", value: spec.email ?? "", "aria-describedby": "sign-in-error" });
  const password = h("input", { id: "sign-in-password", type: "password", autocomplete: "current-password", "aria-describedby": "sign-in-help sign-in-error" });
  const submit = h("button", { type: "submit", class: "primary" }, "Sign in");
  const userForm = h(
    "form",
    {
      class: "key-form",
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        submit.disabled = true; // one sign-in at a time: the screen is drawn again with its outcome
        spec.onUser(email.value.trim(), password.value);
      },
    },
    h("h2", {}, "Sign in as a user"),
    h("label", { for: "sign-in-email" }, "Email"),
    email,
    h("label", { for: "sign-in-password" }, "Password"),
    password,
    h(
      "p",
      { id: "sign-in-help", class: "muted small" },
      "The page then does what this user may. Its session's token stays in this tab (sessionStorage), as a key would; the password is not kept.",
    ),
    h("p", { id: "sign-in-error", class: "field-error", role: "alert" }, spec.userError ?? ""),
    submit,
  );

  const focus = spec.userError ? (email.value === "" ? email : password) : apiKey;
  const element = h("div", { class: "sign-in" }, spec.note ? h("p", { class: "notice", role: "status" }, spec.note) : null, keyForm, h("p", { class: "or muted" }, "or"), userForm);
  return { element, focus };
}
