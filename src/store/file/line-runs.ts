// Reads a file as runs of whole lines, for loading a snapshot fast (docs/architecture.md, "Rows
// parsed on first use"). Each run lies in a buffer that is never reused, so the rows loaded from it
// may keep pointing into it instead of copying their text out. The buffers are large and filled by
// reads of READ_BYTES, and the next read is under way while a run is handed over: the disk and
// the parse overlap.

import { open, type FileHandle } from "node:fs/promises";

/** A buffer holds this much of the file (more when a single line is longer). */
const BUFFER_BYTES = 8 * 1024 * 1024;
const READ_BYTES = 4 * 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * Hands `onRun` every whole line of the file, in order, a run of lines at a time, each run a view of
 * a buffer the caller may keep. With `holdLastLine` the file's last whole line is never handed over
 * (a snapshot's end marker). Answers the file's size and the bytes no run held: that line, if any,
 * and whatever follows the last newline.
 */
export async function readLineRuns(path: string, holdLastLine: boolean, onRun: (run: Buffer) => void): Promise<{ size: number; rest: Buffer }> {
  const handle = await open(path, "r");
  try {
    const { size } = await handle.stat();
    let buffer = Buffer.allocUnsafeSlow(Math.max(1, Math.min(size, BUFFER_BYTES)));
    // buffer[handed, filled) is read but not yet handed over; the file is read up to `position`.
    let handed = 0;
    let filled = 0;
    let position = 0;
    let reading = position < size ? readInto(handle, buffer, filled, position, size) : null;
    while (reading) {
      const bytesRead = await reading;
      // A file cut shorter while it is read (it should not be, a snapshot is never changed) ends here.
      if (bytesRead === 0) break;
      filled += bytesRead;
      position += bytesRead;
      reading = position < size && filled < buffer.length ? readInto(handle, buffer, filled, position, size) : null;
      const cut = lastCut(buffer, handed, filled, holdLastLine);
      if (cut >= handed) {
        onRun(buffer.subarray(handed, cut + 1));
        handed = cut + 1;
      }
      if (reading === null && position < size) {
        // This buffer is full: the lines not handed yet go to the start of the next.
        const carried = filled - handed;
        const next = Buffer.allocUnsafeSlow(carried + Math.min(size - position, BUFFER_BYTES));
        buffer.copy(next, 0, handed, filled);
        buffer = next;
        handed = 0;
        filled = carried;
        reading = readInto(handle, buffer, filled, position, size);
      }
    }
    return { size: position, rest: Buffer.from(buffer.subarray(handed, filled)) };
  } finally {
    await handle.close();
  }
}

/**
 * Where the next newline at or after `from` is, -1 if none: Uint8Array's indexOf, a builtin of V8,
 * which finds a byte several times faster than Buffer's (a call into node's C++ each time), and a
 * start-up asks once per line.
 */
export function newlineAt(bytes: Uint8Array, from: number): number {
  return U8_INDEX_OF.call(bytes, NEWLINE, from);
}

const U8_INDEX_OF = Uint8Array.prototype.indexOf;

function readInto(handle: FileHandle, buffer: Buffer, offset: number, position: number, size: number): Promise<number> {
  const length = Math.min(READ_BYTES, buffer.length - offset, size - position);
  return handle.read(buffer, offset, length, position).then(({ bytesRead }) => bytesRead);
}

/** The last newline in buffer[from, to) that may end a run, or from - 1 if there is none. */
function lastCut(buffer: Buffer, from: number, to: number, holdLastLine: boolean): number {
  if (to === from) return from - 1;
  const last = buffer.lastIndexOf(NEWLINE, to - 1);
  if (last < from) return from - 1;
  if (!holdLastLine) return last;
  // The line that `last` ends is held back: it may be the file's last.
  if (last === from) return from - 1;
  const cut = buffer.lastIndexOf(NEWLINE, last - 1);
  return cut < from ? from - 1 : cut;
}
