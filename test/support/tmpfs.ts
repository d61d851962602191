// A small tmpfs for full-disk tests. Mounting needs root; when it is refused, tests skip with the
// reason rather than pass without testing anything.

import { execFileSync } from "node:child_process";
import { statfsSync } from "node:fs";
import { writeFile } from "node:fs/promises";

/** Mounts a tmpfs of `bytes` on `dir` (an empty folder); answers why not when it cannot. */
export function mountTmpfs(dir: string, bytes: number): string | undefined {
  if (process.getuid?.() !== 0) return "mounting a small tmpfs needs root; run the suite as root to test a full disk";
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir], { stdio: "pipe" });
    return undefined;
  } catch (error) {
    return `mounting a tmpfs was refused (${(error as Error).message.split("\n")[0]})`;
  }
}

export function unmountTmpfs(dir: string): void {
  execFileSync("umount", ["-l", dir]);
}

/** Writes `path` so big that about `roomBytes` stay free on the file system of `dir`. */
export async function fillDisk(dir: string, path: string, roomBytes: number): Promise<void> {
  const { bavail, bsize } = statfsSync(dir);
  await writeFile(path, Buffer.alloc(Math.max(0, bavail * bsize - roomBytes)));
}
