/**
 * API keys and accounts. Each key is its own account, named by the hex sha256 of the key, so the same key finds
 * its data after a restart and the store never holds a key. Keys are compared as sha256 digests with
 * `timingSafeEqual`, so the time an answer takes says nothing about how much of a key was right.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { HttpError } from "./http-error.js";

/** The account of an API key: its sha256, in hex. */
export function accountForKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

const BEARER = /^bearer[ \t]+(\S.*)$/i;
const CHALLENGE = { "WWW-Authenticate": "Bearer" };

export class KeyRing {
  private readonly digests: { digest: Buffer; account: string }[];

  constructor(keys: readonly string[]) {
    this.digests = keys.map((key) => {
      const digest = createHash("sha256").update(key, "utf8").digest();
      return { digest, account: digest.toString("hex") };
    });
  }

  get size(): number {
    return this.digests.length;
  }

  /**
   * The account of the request's `Authorization` header. Throws 401 ERR_NGROK_200 (no header), 201 (not a
   * Bearer credential) or 203 (unknown key), each with `WWW-Authenticate: Bearer`. The key is never echoed.
   */
  authenticate(header: string | undefined): string {
    if (header === undefined || header === "") {
      throw new HttpError(401, "ERR_NGROK_200", "the request has no Authorization header; send Authorization: Bearer <API key>", {}, CHALLENGE);
    }
    const m = BEARER.exec(header);
    if (!m) {
      throw new HttpError(401, "ERR_NGROK_201", "the Authorization header is not a Bearer credential; send Authorization: Bearer <API key>", {}, CHALLENGE);
    }
    const presented = createHash("sha256")
      .update((m[1] as string).trimEnd(), "utf8")
      .digest();
    let account: string | undefined;
    // Every configured key is compared, match or not.
    for (const k of this.digests) {
      if (timingSafeEqual(presented, k.digest)) account ??= k.account;
    }
    if (account === undefined) {
      throw new HttpError(401, "ERR_NGROK_203", "the API key is not valid for this server; check the key you send", {}, CHALLENGE);
    }
    return account;
  }
}
