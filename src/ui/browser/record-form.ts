// The create and edit form, made from the declaration (docs/entities.md): one input per field by its
// type, required fields marked. The API does the validating: its refusal is shown beside the field
// it names (details.field), worded for the form (wording.ts). An edit sends If-Match with the ETag
// read when the form opened, so a record changed since is a 412, offered for reloading rather than
// overwritten.

import { ApiFailure, type ApiClient } from "./api-client.ts";
import { fromInputText, inputKindOf, toInputText, type EntityDecl, type FieldDecl, type InputKind } from "./declarations.ts";
import { h, uniqueId } from "./dom.ts";
import { wordFormRefusal, wordRefusal } from "./wording.ts";

export type ApiRecord = { readonly id: string; readonly [field: string]: unknown };

export interface FormContext {
  readonly client: ApiClient;
  readonly entity: EntityDecl;
  /** After a create or a save, with the record as the API answered it. */
  onSaved(record: ApiRecord, isCreated: boolean): void;
}

interface FieldControl {
  /** The label, the input and the error, together. */
  readonly element: HTMLElement;
  readonly name: string;
  readonly field: FieldDecl;
  readonly input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  readonly error: HTMLElement;
  /** The input's text when the form was filled: an edit sends only the fields that differ. */
  initial: string;
}

export function openCreateForm(ctx: FormContext): void {
  new RecordForm(ctx, null).open();
}

export async function openEditForm(ctx: FormContext, id: string): Promise<void> {
  const form = new RecordForm(ctx, id);
  await form.load();
  form.open();
}

class RecordForm {
  private readonly dialog: HTMLDialogElement;
  private readonly form: HTMLFormElement;
  private readonly banner: HTMLElement;
  private readonly submit: HTMLButtonElement;
  private readonly controls: FieldControl[];
  private etag: string | null = null;
  private readonly opener = document.activeElement as HTMLElement | null;

  constructor(
    private readonly ctx: FormContext,
    private readonly id: string | null,
  ) {
    const { entity } = ctx;
    const titleId = uniqueId("form-title");
    this.controls = Object.entries(entity.properties).map(([name, field]) => createControl(name, field, entity.required.includes(name)));
    this.banner = h("div", { class: "form-banner", role: "alert", hidden: true });
    this.submit = h("button", { type: "submit", class: "primary" }, id === null ? "Create" : "Save");
    const title = id === null ? `New ${entity.name}` : `Edit ${entity.name} `;
    this.form = h(
      "form",
      { novalidate: true, onsubmit: (event: Event) => (event.preventDefault(), void this.save()) },
      h("h2", { id: titleId }, title, id === null ? null : h("code", {}, id)),
      h("p", { class: "muted small" }, "Fields marked * are required. Empty fields are left without a value."),
      this.banner,
      ...this.controls.map((control) => control.element),
      h("div", { class: "form-actions" }, h("button", { type: "button", onclick: () => this.dialog.close() }, "Cancel"), this.submit),
    );
    this.dialog = h("dialog", { class: "record-dialog", "aria-labelledby": titleId }, this.form);
    this.dialog.addEventListener("close", () => {
      this.dialog.remove();
      this.opener?.focus();
    });
    if (id === null) for (const control of this.controls) setControl(control, control.field.default);
  }

  open(): void {
    document.body.append(this.dialog);
    this.dialog.showModal();
    this.controls[0]?.input.focus();
  }

  /** Reads the record and its ETag, and fills the form with them. */
  async load(): Promise<void> {
    const answer = await this.ctx.client.call<ApiRecord>("GET", `${collectionPath(this.ctx.entity)}/${encodeURIComponent(this.id!)}`);
    this.etag = answer.headers.get("ETag");
    for (const control of this.controls) setControl(control, answer.body[control.name]);
  }

  private async save(): Promise<void> {
    this.clearErrors();
    const body: { [field: string]: unknown } = {};
    let isValid = true;
    for (const control of this.controls) {
      const text = textOf(control);
      if (this.id !== null && text === control.initial) continue;
      const parsed = fromInputText(control.field, text);
      if ("problem" in parsed) {
        this.showFieldError(control, `Field "${control.name}" ${parsed.problem}`);
        isValid = false;
      } else if (parsed.value !== null || this.id !== null) {
        body[control.name] = parsed.value; // null on an edit clears the field
      }
    }
    if (!isValid) return this.controls.find((control) => control.input.hasAttribute("aria-invalid"))?.input.focus();
    if (this.id !== null && Object.keys(body).length === 0) return this.dialog.close();
    this.submit.disabled = true;
    try {
      const path = collectionPath(this.ctx.entity);
      const answer =
        this.id === null
          ? await this.ctx.client.call<ApiRecord>("POST", path, { body })
          : await this.ctx.client.call<ApiRecord>("PATCH", `${path}/${encodeURIComponent(this.id)}`, { body, headers: this.etag ? { "If-Match": this.etag } : {} });
      this.dialog.close();
      this.ctx.onSaved(answer.body, this.id === null);
    } catch (error) {
      this.showRefusal(error);
    } finally {
      this.submit.disabled = false;
    }
  }

  private showRefusal(error: unknown): void {
    if (error instanceof ApiFailure && error.status === 412) {
      this.showBanner("This record changed since you opened it. Reload it to see the new version (your edits here are discarded), then edit again.", h("button", { type: "button", onclick: () => void this.reload() }, "Reload the record"));
      return;
    }
    const refusals = error instanceof ApiFailure ? refusalsByField(error) : [];
    const shown = refusals.flatMap(([name, refusal]) => this.controls.filter((control) => control.name === name).map((control) => [control, refusal] as const));
    if (shown.length === 0) return this.showBanner(wordFormRefusal(error, this.ctx.entity, false));
    for (const [control, refusal] of shown) this.showFieldError(control, wordFormRefusal(refusal, this.ctx.entity, true));
    shown[0]![0].input.focus();
  }

  private async reload(): Promise<void> {
    try {
      await this.load();
      this.clearErrors();
      this.controls[0]?.input.focus();
    } catch (error) {
      this.showBanner(wordRefusal(error));
    }
  }

  private showBanner(message: string, action?: HTMLElement): void {
    this.banner.replaceChildren(h("p", {}, message), ...(action ? [action] : []));
    this.banner.hidden = false;
    action?.focus();
  }

  private showFieldError(control: FieldControl, message: string): void {
    control.error.textContent = message;
    control.input.setAttribute("aria-invalid", "true");
  }

  private clearErrors(): void {
    this.banner.hidden = true;
    this.banner.replaceChildren();
    for (const control of this.controls) {
      control.error.textContent = "";
      control.input.removeAttribute("aria-invalid");
    }
  }
}

export function collectionPath(entity: EntityDecl): string {
  return `/api/entities/${encodeURIComponent(entity.name)}`;
}

/**
 * Each field a refusal names, with the refusal for it: details.errors lists every bad field of a
 * record (docs/errors.md), each worded beside its own field; else the one it names.
 */
function refusalsByField(error: ApiFailure): Array<readonly [string, ApiFailure]> {
  const entries = Array.isArray(error.details.errors) ? (error.details.errors as Array<{ field?: unknown; code?: unknown; message?: unknown }>) : [];
  if (entries.length <= 1) return namedFields(error.details).map((name) => [name, error] as const);
  return entries.flatMap((entry) => {
    if (typeof entry.field !== "string") return [];
    const message = String(entry.message);
    // A required field left out has no value to show: wording.ts tells it apart by that.
    const details = / is required/.test(message) ? { field: entry.field } : { field: entry.field, value: null };
    return [[entry.field, new ApiFailure(error.status, String(entry.code), message, details)] as const];
  });
}

/** The fields a refusal names: details.field, or details.fields of a unique_violation (docs/entities.md). */
function namedFields(details: { [name: string]: unknown }): string[] {
  if (typeof details.field === "string") return [details.field];
  if (Array.isArray(details.fields) && details.fields.length <= 3) return details.fields.filter((name): name is string => typeof name === "string");
  return [];
}

const TYPE_HINTS: { readonly [kind in InputKind]: (field: FieldDecl) => string } = {
  select: (field) => `one of ${field.enum!.map((value) => JSON.stringify(value)).join(", ")}`,
  boolean: () => "true, false or no value",
  number: () => "number",
  integer: () => "whole number",
  date: () => "date",
  datetime: () => "date and time, UTC",
  email: () => "email",
  url: () => "URI",
  text: () => "text",
  json: (field) => `JSON ${field.type === "array" ? "array" : "object"}`,
};

function createControl(name: string, field: FieldDecl, isRequired: boolean): FieldControl {
  const kind = inputKindOf(field);
  const id = uniqueId(`field-${name}`);
  const errorId = `${id}-error`;
  const input = createInput(kind, field);
  input.id = id;
  input.name = name;
  input.setAttribute("aria-describedby", errorId);
  if (isRequired) input.setAttribute("aria-required", "true");
  const error = h("p", { class: "field-error", id: errorId, "aria-live": "polite" });
  const element = h(
    "div",
    { class: `field field-${kind}` },
    h("label", { for: id }, name, isRequired ? h("span", { class: "required", title: "required" }, " *") : null, h("span", { class: "hint" }, ` ${TYPE_HINTS[kind](field)}`)),
    input,
    error,
  );
  return { element, name, field, input, error, initial: textOf({ input }) };
}

function createInput(kind: InputKind, field: FieldDecl): HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement {
  switch (kind) {
    case "select":
      return h("select", {}, h("option", { value: "" }, "(no value)"), ...field.enum!.map((value) => h("option", { value: JSON.stringify(value) }, String(value))));
    case "json":
      return h("textarea", { rows: 3, spellcheck: "false", class: "mono" });
    case "boolean":
      // Three states, not a checkbox: a field left alone stays without a value, and an edit can clear one.
      return h("select", {}, h("option", { value: "" }, "(no value)"), h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    case "number":
      return h("input", { type: "number", step: "any" });
    case "integer":
      return h("input", { type: "number", step: "1" });
    case "datetime":
      return h("input", { type: "datetime-local", step: "0.001" });
    case "url":
      return h("input", { type: "url" });
    default:
      return h("input", { type: kind });
  }
}

function textOf(control: Pick<FieldControl, "input">): string {
  return control.input.value;
}

function setControl(control: FieldControl, value: unknown): void {
  control.input.value = toInputText(control.field, value);
  control.initial = textOf(control);
}
