/**
 * Which API and account a client talks to, as a saved plan records it (`plan --out`) and `apply --plan` checks it.
 * The API answers nothing that names the account a key belongs to (docs/api.md: every key is one account, and no
 * path describes it), so the account is recorded as a hash of the key salted with the API's URL: the key cannot be
 * read back from it, two URLs give unrelated hashes, and the same key at the same URL always gives the same bytes,
 * so a saved plan stays deterministic. It is per key, not per account: a plan made with one key of an account is
 * refused with another key of the same account (docs/reliability.md, "A saved plan knows its API").
 */
import { createHash } from "node:crypto";
import type { PlanApi } from "../model/plan.js";

/** What a saved plan records about where it was made (`url`, and `account` from `accountFingerprint`). */
export type ApiIdentity = PlanApi;

/** Sets these hashes apart from any other sha256 of the same text. */
const SALT_PREFIX = "edgeplan saved plan account v1";

/** The account fingerprint of `apiKey` at `url`: sha256 of the salt, the URL and the key, NUL-separated, in hex. */
export function accountFingerprint(url: string, apiKey: string): string {
  return createHash("sha256").update(`${SALT_PREFIX}\0${url}\0${apiKey}`).digest("hex");
}

/** The identity of a client at `url` with `apiKey`. */
export function apiIdentity(url: string, apiKey: string): ApiIdentity {
  return { url, account: accountFingerprint(url, apiKey) };
}
