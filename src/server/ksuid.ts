/**
 * KSUIDs: 4 bytes of seconds since the KSUID epoch and 16 bytes of payload, written as 27 base62 characters.
 * Base62 here is `0-9A-Za-z`, which is ASCII order, so fixed-length ids compare as strings in time order.
 */
import { randomFillSync } from "node:crypto";

/** Seconds between the Unix epoch and the KSUID epoch (2014-05-13T16:53:20Z). */
const KSUID_EPOCH = 1_400_000_000;
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ENCODED_LENGTH = 27;
const BYTES = 20;

/** Encodes 20 bytes as 27 base62 characters (long division over the bytes, no BigInt). */
export function encodeBase62(bytes: Uint8Array): string {
  const digits = Array.from(bytes);
  const out: string[] = [];
  let start = 0;
  while (start < digits.length) {
    let remainder = 0;
    for (let i = start; i < digits.length; i++) {
      const acc = remainder * 256 + (digits[i] as number);
      digits[i] = Math.floor(acc / 62);
      remainder = acc % 62;
    }
    out.push(ALPHABET[remainder] as string);
    while (start < digits.length && digits[start] === 0) start++;
  }
  while (out.length < ENCODED_LENGTH) out.push("0");
  return out.reverse().join("");
}

/** Decodes 27 base62 characters back into 20 bytes; undefined when `s` is not a KSUID body. */
export function decodeBase62(s: string): Uint8Array | undefined {
  if (s.length !== ENCODED_LENGTH) return undefined;
  const bytes = new Uint8Array(BYTES);
  for (const ch of s) {
    let carry = ALPHABET.indexOf(ch);
    if (carry < 0) return undefined;
    for (let i = BYTES - 1; i >= 0; i--) {
      const acc = (bytes[i] as number) * 62 + carry;
      bytes[i] = acc & 0xff;
      carry = acc >>> 8;
    }
    if (carry !== 0) return undefined; // larger than 20 bytes
  }
  return bytes;
}

// Random bytes are drawn in blocks: one system call per 256 ids instead of one per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomPayload(into: Uint8Array, offset: number): void {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  pool.copy(into, offset, poolOffset, poolOffset + 16);
  poolOffset += 16;
}

function writeTimestamp(into: Uint8Array, seconds: number): void {
  const t = seconds - KSUID_EPOCH;
  into[0] = (t >>> 24) & 0xff;
  into[1] = (t >>> 16) & 0xff;
  into[2] = (t >>> 8) & 0xff;
  into[3] = t & 0xff;
}

/** A KSUID with the current time and a random payload: for operation ids, which need no order. */
export function randomKsuid(nowMs: number = Date.now()): string {
  const bytes = new Uint8Array(BYTES);
  writeTimestamp(bytes, Math.floor(nowMs / 1000));
  randomPayload(bytes, 4);
  return encodeBase62(bytes);
}

/**
 * A KSUID for a store shared by several processes: the second, then a database sequence number (8 bytes,
 * big-endian), then 8 random bytes. Unique because the sequence is; sorted by second, then by sequence, so ids
 * made one after another through any process sort in the order they were made.
 */
export function sequencedKsuid(seconds: number, sequence: bigint): string {
  const bytes = new Uint8Array(BYTES);
  writeTimestamp(bytes, seconds);
  new DataView(bytes.buffer).setBigUint64(4, sequence);
  randomPayload(bytes, 12);
  return encodeBase62(bytes);
}

/** Unix seconds of a KSUID body, or undefined when it is not one. */
export function ksuidSeconds(body: string): number | undefined {
  const bytes = decodeBase62(body);
  if (!bytes) return undefined;
  return (((bytes[0] as number) << 24) >>> 0) + ((bytes[1] as number) << 16) + ((bytes[2] as number) << 8) + (bytes[3] as number) + KSUID_EPOCH;
}

/**
 * Makes KSUIDs that always sort after every one it made before: within one second (or when the clock goes
 * back) the previous payload is incremented instead of drawing a new random one, so id order is creation order.
 */
export class MonotonicKsuid {
  private last: Uint8Array | undefined;
  private lastSeconds = 0;

  /** Continues after `previous` (a KSUID body made earlier, e.g. before a restart), so order survives restarts. */
  constructor(previous?: string) {
    if (previous) {
      const bytes = decodeBase62(previous);
      if (bytes) {
        this.last = bytes;
        this.lastSeconds = ksuidSeconds(previous) ?? 0;
      }
    }
  }

  /** The next KSUID body and the second it carries (the `created_at` of the object it names). */
  next(nowMs: number = Date.now()): { body: string; seconds: number } {
    const now = Math.floor(nowMs / 1000);
    const bytes = new Uint8Array(BYTES);
    if (this.last && now <= this.lastSeconds) {
      bytes.set(this.last);
      if (!increment(bytes, 4)) {
        // All 2^128 payloads of this second were used: move to the next second.
        this.lastSeconds += 1;
        writeTimestamp(bytes, this.lastSeconds);
        bytes.fill(0, 4);
      }
    } else {
      this.lastSeconds = now;
      writeTimestamp(bytes, now);
      randomPayload(bytes, 4);
    }
    this.last = bytes;
    return { body: encodeBase62(bytes), seconds: this.lastSeconds };
  }
}

/** Adds one to the big-endian number in bytes[from..]; false on overflow. */
function increment(bytes: Uint8Array, from: number): boolean {
  for (let i = bytes.length - 1; i >= from; i--) {
    const v = (bytes[i] as number) + 1;
    if (v <= 0xff) {
      bytes[i] = v;
      return true;
    }
    bytes[i] = 0;
  }
  return false;
}

/** RFC 3339 in UTC, second precision, `Z` suffix: `2025-09-04T10:11:37Z`. */
export function rfc3339Seconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 19) + "Z";
}
