// Signed URLs of files (docs/api.md, "Files"): ?expires=<unix seconds>&signature=<HMAC-SHA256 of the
// id and the expiry>, under a secret made once for the store and kept in its metadata, so that
// every process sharing a PostgreSQL store checks the URLs any of them signed.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { forbidden } from "../errors.ts";
import type { Store } from "../store/store.ts";

const SECRET_META = "files.signing_secret";
const SECRET_BYTES = 32;

export class FileSigning {
  private secret: Buffer | null = null;

  constructor(private readonly store: Store) {}

  /** The query of a URL to the file `id` readable until `expires` (unix seconds). */
  async sign(id: string, expires: number): Promise<string> {
    const secret = await this.signingSecret();
    return `expires=${expires}&signature=${signatureOf(secret, id, expires)}`;
  }

  /** Refuses (403) unless `query` carries a signature of `id` that has not expired at `nowSeconds`. */
  async check(id: string, query: URLSearchParams, nowSeconds: number): Promise<void> {
    const expiresText = query.get("expires");
    const signature = query.get("signature");
    if (expiresText === null || signature === null) {
      throw forbidden("This file is private: it is read only through a signed URL (?expires=…&signature=…), which CreateFileSignedUrl or POST /api/files/signed-url makes.");
    }
    const expires = Number(expiresText);
    const secret = /^\d{1,12}$/.test(expiresText) ? await this.checkingSecret() : null;
    const expected = secret === null ? null : Buffer.from(signatureOf(secret, id, expires));
    const given = Buffer.from(signature);
    if (expected === null || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw forbidden("This signed URL's signature does not match: it was changed, or signed for another file. Ask for a new one (CreateFileSignedUrl).");
    }
    if (expires <= nowSeconds) throw forbidden(`This signed URL expired at ${new Date(expires * 1000).toISOString()}; ask for a new one (CreateFileSignedUrl).`);
  }

  /** Made once for the store, under its lock: one secret for every process. */
  private async signingSecret(): Promise<Buffer> {
    const known = await this.checkingSecret();
    if (known !== null) return known;
    const kept = await this.store.exclusively(SECRET_META, async () => {
      const stored = await this.store.meta(SECRET_META);
      if (typeof stored === "string") return stored;
      const made = randomBytes(SECRET_BYTES).toString("base64url");
      await this.store.commit({ puts: [], meta: [{ key: SECRET_META, value: made }] });
      return made;
    });
    return (this.secret = Buffer.from(kept, "base64url"));
  }

  /** Another process may have made it since this one last looked. */
  private async checkingSecret(): Promise<Buffer | null> {
    if (this.secret !== null) return this.secret;
    const kept = await this.store.meta(SECRET_META);
    return typeof kept === "string" ? (this.secret = Buffer.from(kept, "base64url")) : null;
  }
}

function signatureOf(secret: Buffer, id: string, expires: number): string {
  return createHmac("sha256", secret).update(`file ${id} ${expires}`).digest("base64url");
}
