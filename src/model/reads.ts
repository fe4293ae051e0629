/**
 * How many requests a read takes, written once for the client that reads (src/api/fetch-live.ts) and for the plan's
 * estimate of what an apply will send (src/core/estimate.ts), so that the two cannot disagree; and what the plan's
 * read of child ids asks for and finds (src/core/child-ids.ts decides, src/api/fetch-live.ts reads). Pure.
 */
import type { FixtureBackendType } from "./wire.js";

/** One child backend to read by id, its type from its prefix. */
export interface ChildRead {
  type: FixtureBackendType;
  id: string;
}

/** What reading the child ids found: the ids the account holds, and the ids of each type that a suggestion may name. */
export interface ChildReadResult {
  found: ReadonlySet<string>;
  /** Per type, ids the account holds (its listing, read only when an id of that type was not found). */
  known: ReadonlyMap<FixtureBackendType, readonly string[]>;
}

/** Weighted backends per list page (`limit=100`, the API's largest page). */
export const LIST_PAGE_SIZE = 100;

/** Requests a full listing of `count` weighted backends takes: one page per 100, and one page when there are none. */
export function listPages(count: number): number {
  return Math.max(1, Math.ceil(count / LIST_PAGE_SIZE));
}

/**
 * Whether reading `ids` weighted backends again is done by listing the account (which holds `accountCount` of them)
 * rather than one GET per id: only when listing takes fewer requests. An unknown account size never lists.
 */
export function readsByListing(ids: number, accountCount: number | undefined): boolean {
  return ids > 0 && accountCount !== undefined && listPages(accountCount) < ids;
}

/**
 * Whether the routes of `edges` edges are read from the first page of the edge list (one request; it holds the
 * account's 100 newest edges with their routes and modules) rather than with one GET per edge: when they are on more
 * than one edge. In an account of more than 100 edges, an edge the page lacks is then read by id as well.
 */
export function readsEdgePage(edges: number): boolean {
  return edges > 1;
}

/** Requests reading the routes of `edges` edges takes, in an account of at most 100 edges. */
export function edgeReads(edges: number): number {
  return readsEdgePage(edges) ? 1 : edges;
}
