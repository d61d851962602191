// The formats of an export (docs/operating.md): NDJSON (one record per line), a JSON array, and CSV
// (RFC 4180: a header of the record's fields, CRLF line ends, a value quoted when it holds a comma,
// a quote or a line break; arrays and objects as their JSON text). Records are shaped for the
// caller's key as every read shapes them (serialize.ts): publishable keys never see created_by_id.

import type { EntityDef } from "../schema/fields.ts";
import type { Row } from "../store/store.ts";
import type { Caller } from "../keys/caller.ts";
import { recordJson } from "./serialize.ts";
import { fieldsHiddenIn, grantsOf, hiddenFieldsOf } from "../rules/grants.ts";

export const EXPORT_FORMATS = ["ndjson", "json", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export function isExportFormat(text: string): text is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(text);
}

/** Turns pages of rows into the text of one format: head, then each page, then tail. */
export interface ExportEncoder {
  readonly contentType: string;
  readonly head: string;
  page(rows: readonly Row[]): string;
  readonly tail: string;
}

export function exportEncoder(format: ExportFormat, entity: EntityDef, caller: Caller): ExportEncoder {
  // An export's rows are read once: their JSON is not cached (it would push out the rows clients read again).
  const json = (row: Row) => recordJson(entity, row, caller, false);
  switch (format) {
    case "ndjson":
      return {
        contentType: "application/x-ndjson; charset=utf-8",
        head: "",
        page: (rows) => rows.map((row) => json(row) + "\n").join(""),
        tail: "",
      };
    case "json": {
      let isFirst = true;
      return {
        contentType: "application/json; charset=utf-8",
        head: "[",
        page(rows) {
          let text = "";
          for (const row of rows) {
            text += (isFirst ? "\n" : ",\n") + json(row);
            isFirst = false;
          }
          return text;
        },
        get tail() {
          return isFirst ? "]\n" : "\n]\n";
        },
      };
    }
    case "csv": {
      const columns = csvColumns(entity, caller);
      return {
        contentType: "text/csv; charset=utf-8; header=present",
        head: columns.map(csvField).join(",") + "\r\n",
        page: (rows) => rows.map((row) => csvRow(entity, caller, columns, row)).join(""),
        tail: "",
      };
    }
  }
}

/** One record's line: a field the caller's rules keep from it on this record is left empty (docs/rules.md). */
function csvRow(entity: EntityDef, caller: Caller, columns: readonly string[], row: Row): string {
  const hidden = caller.kind === "secret" ? null : fieldsHiddenIn(entity, caller, row);
  return columns.map((name) => csvField(hidden?.includes(name) ? "" : csvText(row.data[name]))).join(",") + "\r\n";
}

/** id, the declared fields in declaration order (less those the caller may never read), the timestamps, and created_by_id for secret keys. */
export function csvColumns(entity: EntityDef, caller: Caller): string[] {
  const hidden = hiddenFieldsOf(entity, caller);
  const declared = hidden === null ? entity.fieldNames : entity.fieldNames.filter((name) => !hidden.has(name) || grantsOf(entity, caller).unreadable!.get(name) !== false);
  const columns = ["id", ...declared, "created_date", "updated_date"];
  if (caller.kind === "secret") columns.push("created_by_id");
  return columns;
}

/** A stored value as CSV text: nothing for none, JSON for arrays and objects. */
function csvText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** RFC 4180 §2.6–2.7: quoted when it holds a comma, a quote or a line break; quotes doubled. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
