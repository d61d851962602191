// Taking the port: the first thing a server does once its options are checked, before the store
// opens its data folder or writes keys.json, so that a busy port stops a start-up with nothing
// written. A busy port is a PortInUseError (code EADDRINUSE), which the command line words as
// its flags.

import type { Server } from "node:http";

export class PortInUseError extends Error {
  readonly code = "EADDRINUSE";

  constructor(
    readonly port: number,
    readonly host: string,
  ) {
    super(`Port ${port} on ${host} is in use; give another port, or port 0 for a free one.`);
    this.name = "PortInUseError";
  }
}

export function listen(http: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const refuse = (error: NodeJS.ErrnoException) => reject(error.code === "EADDRINUSE" ? new PortInUseError(port, host) : error);
    http.once("error", refuse);
    http.listen(port, host, () => {
      http.off("error", refuse);
      resolve();
    });
  });
}
