/**
 * The paging rules of every list (docs/api.md "Paging"): `limit` 1..100 (default 100), `before_id` (or `beforeId`, the
 * spelling of the vendor's generated TypeScript client; not both), nothing else; newest first; `next_page_uri` with sorted query keys, or null when nothing is left.
 */
import { LIMITS } from "../model/wire.js";
import { HttpError } from "./http-error.js";
import type { PageQuery } from "./store.js";
import { unstorableText } from "../model/wire.js";

const PAGE_PARAMS = new Set(["limit", "before_id", "beforeId"]);
const DECIMAL = /^[0-9]{1,4}$/;

/**
 * Parses a list's query string; throws ERR_NGROK_231 for other parameters, ERR_NGROK_233 for a bad limit and
 * ERR_NGROK_215 for a before_id holding text no store can hold.
 */
export function parsePageQuery(query: string): PageQuery {
  const page: PageQuery = { limit: LIMITS.pageLimitMax };
  if (query === "") return page;
  const seen = new Set<string>();
  for (const [key, value] of new URLSearchParams(query)) {
    if (!PAGE_PARAMS.has(key)) {
      throw new HttpError(400, "ERR_NGROK_231", `unknown query parameter "${key}": a list takes only limit and before_id`, {
        parameter: key,
      });
    }
    if (seen.has(key)) {
      throw new HttpError(400, "ERR_NGROK_231", `query parameter "${key}" is given more than once; give it once`, { parameter: key });
    }
    if (key !== "limit" && page.beforeId !== undefined) {
      throw new HttpError(400, "ERR_NGROK_231", "before_id and beforeId name the same parameter; give one of them", { parameter: key });
    }
    seen.add(key);
    if (key === "limit") {
      const n = DECIMAL.test(value) ? Number(value) : NaN;
      if (!(n >= 1 && n <= LIMITS.pageLimitMax)) {
        throw new HttpError(400, "ERR_NGROK_233", `limit "${value.slice(0, 40)}" is not a whole number from 1 to ${LIMITS.pageLimitMax}`, { parameter: "limit" });
      }
      page.limit = n;
    } else {
      page.beforeId = beforeId(key, value);
    }
  }
  return page;
}

/** The value of `before_id` (or `beforeId`): any text a store can compare ids with (ERR_NGROK_215 otherwise). */
function beforeId(key: string, value: string): string {
  const problem = unstorableText(value);
  if (problem !== undefined) throw new HttpError(400, "ERR_NGROK_215", `query parameter ${key}: ${problem}`, { parameter: key });
  return value;
}

/** Rejects any query parameter on an endpoint that takes none (ERR_NGROK_231). */
export function rejectQuery(query: string): void {
  if (query === "") return;
  for (const key of new URLSearchParams(query).keys()) {
    throw new HttpError(400, "ERR_NGROK_231", `unknown query parameter "${key}": this endpoint takes no query parameters`, {
      parameter: key,
    });
  }
}

/**
 * Runs a page query for one more item than asked, to know whether another page exists, and returns the page with
 * the list's `uri` and `next_page_uri`.
 */
export async function buildPage<T extends { id: string }>(
  listUrl: string,
  page: PageQuery,
  fetch: (q: PageQuery) => T[] | Promise<T[]>,
): Promise<{ items: T[]; uri: string; next_page_uri: string | null }> {
  const rows = await fetch({ ...page, limit: page.limit + 1 });
  const more = rows.length > page.limit;
  const items = more ? rows.slice(0, page.limit) : rows;
  const last = items[items.length - 1];
  const next = more && last ? `${listUrl}?before_id=${encodeURIComponent(last.id)}&limit=${page.limit}` : null;
  return { items, uri: listUrl, next_page_uri: next };
}
