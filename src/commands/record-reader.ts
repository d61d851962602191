// An import file's records as `tabula import` reads them, from a file or stdin, a chunk at a time
// (records/record-splitter.ts cuts and parses them).

import { parseRecord, RecordSplitter, type SourceRecord } from "../records/record-splitter.ts";

/** Reads `source` (a file's or stdin's text chunks) as records, parsing each. */
export async function* readRecords(source: AsyncIterable<string>, splitter = new RecordSplitter()): AsyncGenerator<SourceRecord & { readonly value: unknown }> {
  for await (const chunk of source) for (const record of splitter.push(chunk)) yield parseRecord(record);
  for (const record of splitter.end()) yield parseRecord(record);
}
