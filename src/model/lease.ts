/**
 * What a stack lease object says (its body is built by src/apply/lease-record.ts): read by the apply that takes the
 * lease, and by plans and exports, which leave every lease object out. Pure.
 */
import { isJsonObject } from "./canonical.js";
import { MARKER_KEY } from "./state.js";

/** Who runs the apply that holds (or wants) the lease. */
export interface LeaseHolder {
  host: string;
  pid: number;
  /** The CI run's URL, when the apply runs in one (GitHub Actions). */
  run_url?: string;
  /** The project file's environment the apply runs in (`--env`), when it defines any. */
  environment?: string;
  /** When this apply started, as the holder's clock says (shown to people; never compared). */
  started_at: string;
  /** Random, per apply: finds the candidate again when the answer to its create was lost. */
  token: string;
}

/** What a lease object says. */
export interface Lease {
  id: string;
  stack: string;
  holder: LeaseHolder;
  /** How long the lease stays valid without a renewal, in ms (the holder's `--lock-ttl`). */
  ttlMs: number;
  /** Renewals so far: a taker that sees this number unchanged for `ttlMs` of its own clock takes the lease as expired. */
  renewals: number;
}

/**
 * The record a bookkeeping object of a stack holds under `edgeplan.<key>` (a lease, an inventory), with its stack;
 * null when the metadata holds none. A cheap test first: every such metadata holds `"<key>":{` as canonicalJson
 * writes it, so the objects of manifests are not parsed.
 */
export function bookkeepingRecord(metadata: string, key: "lease" | "inventory"): { stack: string; record: Record<string, unknown> } | null {
  if (!metadata.includes(`"${key}":{`)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(metadata);
  } catch {
    return null;
  }
  const marker = isJsonObject(parsed) ? parsed[MARKER_KEY] : undefined;
  if (!isJsonObject(marker) || typeof marker.stack !== "string" || !isJsonObject(marker[key])) return null;
  return { stack: marker.stack, record: marker[key] };
}

/** The lease an object holds, or null when it is not a lease object (a manifest's object, a foreign one). */
export function parseLease(wb: { id: string; metadata: string }): Lease | null {
  const found = bookkeepingRecord(wb.metadata, "lease");
  if (found === null) return null;
  const marker = { stack: found.stack, lease: found.record };
  const { holder, ttl_ms, renewals } = marker.lease;
  if (!isJsonObject(holder) || typeof ttl_ms !== "number" || typeof renewals !== "number") return null;
  const h: LeaseHolder = {
    host: String(holder.host ?? "?"),
    pid: Number(holder.pid ?? 0),
    started_at: String(holder.started_at ?? ""),
    token: String(holder.token ?? ""),
  };
  if (typeof holder.run_url === "string") h.run_url = holder.run_url;
  if (typeof holder.environment === "string") h.environment = holder.environment;
  return { id: wb.id, stack: marker.stack, holder: h, ttlMs: ttl_ms, renewals };
}

/** Whether an object is a lease object (of any stack): plans, exports and prunes leave these out. */
export function isLeaseObject(wb: { id: string; metadata: string }): boolean {
  return parseLease(wb) !== null;
}
