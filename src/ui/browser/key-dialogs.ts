// The Keys page's two pieces that stand apart from its table: the box that shows a new key once,
// with a copy button, and the modal dialog that asks before a roll or a revoke. What they ask the
// API, and what they show of its answers, is keys-view.ts's.

import { h, uniqueId } from "./dom.ts";

/** POST /api/keys and POST /api/keys/<id>/roll answer the key listed, plus the key in full, once. */
export interface NewKeyAnswer {
  readonly id: string;
  readonly kind: "secret" | "publishable";
  readonly name: string;
  readonly prefix: string;
  readonly key: string;
  /** A roll's predecessor, with the expiry it now has. */
  readonly rolled?: { readonly prefix: string; readonly expires_at: string | null };
}

/**
 * The new key in full, marked as shown once, with Copy and Done. Done (or leaving the page) drops
 * it from the page: the server keeps only its hash, so nothing can show it again.
 */
export function showNewKey(key: string, title: string, oldKeyWords: string | null, onDone: () => void): HTMLElement {
  const titleId = uniqueId("new-key-title");
  const value = h("code", { class: "new-key-value", "data-new-key": "" }, key);
  const copied = h("span", { class: "muted small", role: "status" });
  const copy = h("button", { type: "button", class: "primary", onclick: () => void copyKey(key, value, copied) }, "Copy");
  const box = h(
    "section",
    { class: "new-key", role: "region", "aria-labelledby": titleId },
    h("h3", { id: titleId }, title),
    h("p", {}, h("strong", {}, "Copy it now: it will not be shown again. "), "The server keeps only its hash and first characters."),
    h("div", { class: "new-key-row" }, value, copy, copied),
    oldKeyWords === null ? null : h("p", { class: "small" }, oldKeyWords),
    h("div", { class: "form-actions" }, h("button", { type: "button", onclick: onDone }, "Done")),
  );
  // After the list redraws beneath it: the box is what the person came for.
  requestAnimationFrame(() => (box.scrollIntoView({ block: "nearest" }), copy.focus()));
  return box;
}

/** The clipboard when the browser offers it (a secure context: localhost or https); else the key, selected, for a Ctrl+C. */
async function copyKey(key: string, value: HTMLElement, status: HTMLElement): Promise<void> {
  try {
    if (!navigator.clipboard) throw new Error("no clipboard here");
    await navigator.clipboard.writeText(key);
    status.textContent = "Copied.";
  } catch {
    // Refused (no permission, or plain http on another host): the selection is the way left.
    const range = document.createRange();
    range.selectNodeContents(value);
    const selection = getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    status.textContent = "Selected: press Ctrl+C (⌘C on a Mac) to copy it.";
  }
}

export interface KeyDialog {
  readonly title: string;
  readonly body: ReadonlyArray<Node | null>;
  readonly confirm: string;
  readonly isDanger?: boolean;
  /** Runs once the dialog has closed; the outcome is shown by the page, not the dialog. */
  onConfirm(): void;
}

/** A modal dialog with Cancel and a confirming button; Escape and Cancel close it, asking nothing. */
export function openKeyDialog(spec: KeyDialog): void {
  const titleId = uniqueId("key-dialog-title");
  const opener = document.activeElement as HTMLElement | null;
  const dialog = h("dialog", { class: "record-dialog key-dialog", "aria-labelledby": titleId });
  const form = h(
    "form",
    { novalidate: true, onsubmit: (event: Event) => (event.preventDefault(), dialog.close(), spec.onConfirm()) },
    h("h2", { id: titleId }, spec.title),
    ...spec.body,
    h("div", { class: "form-actions" }, h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"), h("button", { type: "submit", class: spec.isDanger ? "danger" : "primary" }, spec.confirm)),
  );
  dialog.append(form);
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (opener?.isConnected) opener.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
}
