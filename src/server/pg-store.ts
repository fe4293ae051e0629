/**
 * The Store on PostgreSQL (node-postgres), shared by every replica of one database.
 *
 * - Transactions run at READ COMMITTED on a pooled connection. `BEGIN` is sent before the first statement that
 *   locks or writes; reads before it run as statements of their own, which at READ COMMITTED sees exactly what
 *   they would see inside the transaction (every statement takes its own snapshot), so a GET costs one round trip.
 * - Locks make checks hold until the write commits: the object a write changes is read `FOR UPDATE`; the weighted
 *   backends a write references are read `FOR SHARE`; creates take an advisory lock per account (so the per-account
 *   limit is exact); a write that adds a reference between weighted backends takes another advisory lock per account,
 *   the graph lock, before any row lock, and walks for cycles under it (docs/reliability.md, section 9, says why
 *   that is enough). A transaction that loses a race (deadlock) runs again while the budget of contention.ts allows.
 * - `COMMIT` returns once the commit is flushed (`synchronous_commit = on` is set per connection), so a write is
 *   answered only when PostgreSQL holds it durably.
 * - Ids come from one database sequence and the database's clock (see `sequencedKsuid`): unique and in creation
 *   order across replicas, whatever their clocks say.
 * - The rate limit is one row per account holding the times of its last accepted requests (the database's clock),
 *   updated in one statement, so all replicas share one budget.
 */
import pg from "pg";
import { EdgeplanError } from "../model/errors.js";
import { createRedactor } from "../model/redact.js";
import { FIXTURE_BACKEND_TYPES, ID_PREFIX, type CircuitBreakerSettings, type FixtureBackendType } from "../model/wire.js";
import { retryLostRaces, TransactionConflict } from "./contention.js";
import { rateLimited } from "./faults.js";
import { rfc3339Seconds, sequencedKsuid } from "./ksuid.js";
import { migrate, STARTUP_LOCK } from "./pg-schema.js";
import type {
  ChildBackendFields,
  EdgeRecord,
  FixtureBackendRecord,
  PageQuery,
  PoolUse,
  RateGate,
  RouteRecord,
  Store,
  StoredSaml,
  StoreObserver,
  StoreTx,
  TransactionOptions,
  WeightedBackendRecord,
} from "./store.js";
import {
  checkId,
  edgeFromRow,
  fixtureBackendFromRow,
  fixtureBackendType,
  fixtureIdRange,
  routeFromRow,
  routeOfEdge,
  weightedFromRow,
  type EdgeRow,
  type FixtureBackendRow,
  type RouteRow,
  type WeightedRow,
} from "./store-rows.js";

const WB = "id, created_at, description, metadata, backends";
const EDGE = "id, created_at, description, metadata, hostports";
const ROUTE = "id, edge_id, created_at, match, match_type, saml, circuit_breaker";
const FB = "id, type, created_at, fields";

/** Every statement, by name: each connection prepares a statement once, on its first use. */
const SQL = {
  newId: "SELECT nextval('edgeplan_ids')::text AS n, floor(extract(epoch FROM clock_timestamp()))::int AS s",
  lockAccount: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
  lockGraph: "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))",
  tryLockGraph: "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 1)) AS ok",
  wbGet: `SELECT ${WB} FROM weighted_backends WHERE account = $1 AND id = $2`,
  wbGetForUpdate: `SELECT ${WB} FROM weighted_backends WHERE account = $1 AND id = $2 FOR UPDATE`,
  wbList: `SELECT ${WB} FROM weighted_backends WHERE account = $1 ORDER BY id DESC LIMIT $2`,
  wbListBefore: `SELECT ${WB} FROM weighted_backends WHERE account = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  wbCount: "SELECT count(*)::int AS n FROM weighted_backends WHERE account = $1",
  wbInsert: `WITH w AS (INSERT INTO weighted_backends (account, id, created_at, description, metadata, backends) VALUES ($1, $2, $3, $4, $5, $6))
    INSERT INTO backend_children (account, parent, child) SELECT $1, $2, unnest($7::text[])`,
  wbUpdate: `WITH w AS (UPDATE weighted_backends SET description = $3, metadata = $4, backends = $5 WHERE account = $1 AND id = $2),
    d AS (DELETE FROM backend_children WHERE account = $1 AND parent = $2 AND NOT (child = ANY ($6::text[])))
    INSERT INTO backend_children (account, parent, child) SELECT $1, $2, unnest($6::text[]) ON CONFLICT DO NOTHING`,
  wbDelete: `WITH w AS (DELETE FROM weighted_backends WHERE account = $1 AND id = $2 RETURNING 1),
    c AS (DELETE FROM backend_children WHERE account = $1 AND parent = $2)
    SELECT count(*)::int AS n FROM w`,
  parents: "SELECT parent FROM backend_children WHERE account = $1 AND child = $2 ORDER BY parent LIMIT $3",
  // Read under the graph lock, each in a statement of its own, so each sees every reference committed before the
  // lock was granted (a lock taken inside a join would leave the joined rows at the statement's older snapshot).
  weightedChildren: "SELECT child FROM backend_children WHERE account = $1 AND parent = $2 AND child >= 'bkdwd_' AND child < 'bkdwd`'",
  wbShare: "SELECT id FROM weighted_backends WHERE account = $1 AND id = ANY ($2::text[]) FOR SHARE",
  fbExisting: "SELECT id FROM fixture_backends WHERE account = $1 AND id = ANY ($2::text[])",
  fbGet: `SELECT ${FB} FROM fixture_backends WHERE account = $1 AND id = $2`,
  fbList: `SELECT ${FB} FROM fixture_backends WHERE account = $1 AND id > $2 AND id < $3 ORDER BY id DESC LIMIT $4`,
  fbListBefore: `SELECT ${FB} FROM fixture_backends WHERE account = $1 AND id > $2 AND id < $3 AND id < $4 ORDER BY id DESC LIMIT $5`,
  fbInsert: "INSERT INTO fixture_backends (account, id, type, created_at, fields) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
  edgeGet: `SELECT ${EDGE} FROM edges WHERE account = $1 AND id = $2`,
  edgeList: `SELECT ${EDGE} FROM edges WHERE account = $1 ORDER BY id DESC LIMIT $2`,
  edgeListBefore: `SELECT ${EDGE} FROM edges WHERE account = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  edgeInsert: `INSERT INTO edges (account, id, created_at, description, metadata, hostports) VALUES ($1, $2, $3, '', '', $4) ON CONFLICT DO NOTHING`,
  routeGet: `SELECT ${ROUTE} FROM routes WHERE account = $1 AND id = $2`,
  routeGetForUpdate: `SELECT ${ROUTE} FROM routes WHERE account = $1 AND id = $2 FOR UPDATE`,
  routesOfEdge: `SELECT ${ROUTE} FROM routes WHERE account = $1 AND edge_id = $2 ORDER BY id`,
  routeInsert: `INSERT INTO routes (account, id, edge_id, created_at, match, match_type) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
  routeSetSaml: "UPDATE routes SET saml = $3 WHERE account = $1 AND id = $2",
  routeSetCb: "UPDATE routes SET circuit_breaker = $3 WHERE account = $1 AND id = $2",
  fixtureKeyGet: "SELECT id FROM fixture_keys WHERE account = $1 AND key = $2",
  fixtureKeySet: "INSERT INTO fixture_keys (account, key, id) VALUES ($1, $2, $3) ON CONFLICT (account, key) DO UPDATE SET id = excluded.id",
  // One statement decides and records: the row is locked while it runs, so replicas take turns. `excluded.times[1]`
  // is the database's time of this request; `admitted` and the oldest time that still counts come back.
  rateTake: `INSERT INTO rate_limits AS r (account, times, admitted)
    VALUES ($1, ARRAY[(extract(epoch FROM clock_timestamp()) * 1000)::bigint], true)
    ON CONFLICT (account) DO UPDATE SET
      admitted = cardinality(r.times) < $2 OR excluded.times[1] - r.times[cardinality(r.times) - $2 + 1] >= $3,
      times = CASE WHEN cardinality(r.times) < $2 OR excluded.times[1] - r.times[cardinality(r.times) - $2 + 1] >= $3
        THEN (r.times || excluded.times[1])[greatest(1, cardinality(r.times) + 2 - $2):] ELSE r.times END
    RETURNING admitted, times[greatest(1, cardinality(times) - $2 + 1)]::float8 AS oldest,
      (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`,
} as const;

type Statement = keyof typeof SQL;

/** Statements that need the transaction begun: they lock or write. */
const IN_TRANSACTION: ReadonlySet<Statement> = new Set<Statement>([
  "lockAccount",
  "lockGraph",
  "tryLockGraph",
  "wbGetForUpdate",
  "wbInsert",
  "wbUpdate",
  "wbDelete",
  "wbShare",
  "fbInsert",
  "edgeInsert",
  "routeGetForUpdate",
  "routeInsert",
  "routeSetSaml",
  "routeSetCb",
  "fixtureKeySet",
]);

/** Serialization failure, deadlock, a lock not granted in time: the transaction lost a race and may simply run again. */
const LOST_RACE = new Set(["40001", "40P01", "55P03"]);

const RACE_REASONS: Record<string, string> = { "40001": "serialization_failure", "40P01": "deadlock", "55P03": "lock_not_available" };

function raceReason(err: unknown): string {
  return err instanceof TransactionConflict ? "graph_lock" : (RACE_REASONS[(err as { code?: string }).code ?? ""] ?? "conflict");
}

function lostRace(err: unknown): boolean {
  return err instanceof TransactionConflict || LOST_RACE.has((err as { code?: string }).code ?? "");
}

/** The URL with its password hidden, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(the --database URL)";
  }
}

/**
 * Connects to `url` with a pool of `poolSize` connections and migrates the schema. Throws an EdgeplanError (the
 * password hidden) when the database cannot be reached or has a newer schema.
 */
export async function openPgStore(url: string, poolSize: number): Promise<PgStore> {
  return new PgStore(await openPgPool(url, poolSize, "the database", migrate), poolSize);
}

/**
 * A pool of `poolSize` connections to `url` whose commits are durable when answered, once `setup` (a migration)
 * has run on one of them. Throws an EdgeplanError naming `what` and the URL with its password hidden when the
 * database cannot be reached; an EdgeplanError of `setup` goes through as it is.
 */
export async function openPgPool(url: string, poolSize: number, what: string, setup: (client: pg.PoolClient) => Promise<void>): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: "-c synchronous_commit=on", allowExitOnIdle: true });
  // A connection that breaks while idle is dropped by the pool; the next request opens a new one.
  pool.on("error", () => undefined);
  try {
    const client = await pool.connect();
    try {
      await setup(client);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end();
    if (err instanceof EdgeplanError) throw err;
    // The driver's own words could quote the URL: its password is hidden there too.
    const reason = createRedactor(urlPasswords(url))((err as Error).message);
    throw new EdgeplanError(`cannot open ${what} ${redactUrl(url)}: ${reason}; check the URL, and that PostgreSQL runs and lets this user in`, {
      cause: err,
    });
  }
  return pool;
}

/** The password of `url` as written and decoded (none when the URL has none or cannot be read). */
function urlPasswords(url: string): string[] {
  let written: string;
  try {
    written = new URL(url).password;
  } catch {
    return [];
  }
  try {
    return written ? [written, decodeURIComponent(written)] : [];
  } catch {
    return [written]; // a stray `%`
  }
}

export class PgStore implements Store {
  readonly kind = "postgres";
  observer: StoreObserver | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly poolSize: number,
  ) {}

  async transaction<T>(fn: (tx: StoreTx) => Promise<T>, options?: TransactionOptions): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const attempt = async (): Promise<T> => {
      const tx = new PgTx(client);
      try {
        if (options?.startup) await tx.begin(STARTUP_LOCK);
        const result = await fn(tx);
        await tx.end("COMMIT");
        return result;
      } catch (err) {
        await tx.end("ROLLBACK").catch((e: Error) => (broken = e));
        throw err;
      }
    };
    try {
      // A connection whose rollback failed is in an unknown state: its transaction is not run again on it.
      return await retryLostRaces(attempt, (err) => !broken && lostRace(err), { observer: this.observer, raceReason });
    } finally {
      client.release(broken);
    }
  }

  rateGate(count: number, windowMs: number): RateGate {
    return {
      take: async (account) => {
        const { rows } = await this.pool.query<{ admitted: boolean; oldest: number; now: number }>({
          name: "rateTake",
          text: SQL.rateTake,
          values: [account, count, windowMs],
        });
        const row = rows[0];
        if (row && !row.admitted) throw rateLimited(count, windowMs, row.oldest + windowMs - row.now);
      },
    };
  }

  /**
   * `SELECT 1` on a pooled connection, given up after `timeoutMs` (the query then ends on its own; a pool of
   * connections to a database that is gone fails fast, with the driver's error).
   */
  async ping(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.pool.query("SELECT 1"), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  poolUse(): PoolUse {
    return { max: this.poolSize, total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/** One transaction on one pooled connection. */
class PgTx implements StoreTx {
  private begun = false;

  constructor(private readonly client: pg.PoolClient) {}

  /** Sends BEGIN (and takes the advisory lock `lock` for the rest of the transaction). */
  async begin(lock?: number): Promise<void> {
    if (!this.begun) {
      await this.client.query("BEGIN");
      this.begun = true;
    }
    if (lock !== undefined) await this.client.query("SELECT pg_advisory_xact_lock($1)", [lock]);
  }

  async end(command: "COMMIT" | "ROLLBACK"): Promise<void> {
    if (!this.begun) return;
    this.begun = false;
    await this.client.query(command);
  }

  private async q<R extends pg.QueryResultRow>(name: Statement, values: unknown[]): Promise<R[]> {
    if (IN_TRANSACTION.has(name)) await this.begin();
    const result = await this.client.query<R>({ name, text: SQL[name], values });
    return result.rows;
  }

  async newId(prefix: string): Promise<{ id: string; created_at: string }> {
    const [row] = await this.q<{ n: string; s: number }>("newId", []);
    const { n, s } = row as { n: string; s: number };
    return { id: `${prefix}_${sequencedKsuid(s, BigInt(n))}`, created_at: rfc3339Seconds(s) };
  }

  async lockAccount(account: string): Promise<void> {
    await this.q("lockAccount", [account]);
  }

  async lockGraph(account: string, wait = true): Promise<void> {
    if (wait) {
      await this.q("lockGraph", [account]);
      return;
    }
    const [row] = await this.q<{ ok: boolean }>("tryLockGraph", [account]);
    if (!row?.ok) throw new TransactionConflict("the graph lock is held by another transaction; run again, taking it first");
  }

  async getWeightedBackend(account: string, id: string, forUpdate = false): Promise<WeightedBackendRecord | undefined> {
    const [row] = await this.q<WeightedRow>(forUpdate ? "wbGetForUpdate" : "wbGet", [account, id]);
    return row ? weightedFromRow(row) : undefined;
  }

  async listWeightedBackends(account: string, page: PageQuery): Promise<WeightedBackendRecord[]> {
    const rows =
      page.beforeId === undefined
        ? await this.q<WeightedRow>("wbList", [account, page.limit])
        : await this.q<WeightedRow>("wbListBefore", [account, page.beforeId, page.limit]);
    return rows.map(weightedFromRow);
  }

  async countWeightedBackends(account: string): Promise<number> {
    const [row] = await this.q<{ n: number }>("wbCount", [account]);
    return row?.n ?? 0;
  }

  async insertWeightedBackend(account: string, r: WeightedBackendRecord): Promise<void> {
    await this.q("wbInsert", [account, r.id, r.created_at, r.description, r.metadata, JSON.stringify(r.backends), Object.keys(r.backends)]);
  }

  async updateWeightedBackend(account: string, r: WeightedBackendRecord): Promise<void> {
    await this.q("wbUpdate", [account, r.id, r.description, r.metadata, JSON.stringify(r.backends), Object.keys(r.backends)]);
  }

  async deleteWeightedBackend(account: string, id: string): Promise<boolean> {
    const [row] = await this.q<{ n: number }>("wbDelete", [account, id]);
    return (row?.n ?? 0) > 0;
  }

  async parentsOf(account: string, childId: string, limit: number): Promise<string[]> {
    return (await this.q<{ parent: string }>("parents", [account, childId, limit])).map((r) => r.parent);
  }

  async weightedChildrenOf(account: string, id: string): Promise<string[]> {
    return (await this.q<{ child: string }>("weightedChildren", [account, id])).map((r) => r.child);
  }

  async existingBackends(account: string, ids: string[]): Promise<Set<string>> {
    const weighted = ids.filter((id) => id.startsWith(`${ID_PREFIX.weightedBackend}_`));
    const fixtures = ids.filter((id) => !id.startsWith(`${ID_PREFIX.weightedBackend}_`));
    const found = new Set<string>();
    if (weighted.length > 0) for (const r of await this.q<{ id: string }>("wbShare", [account, weighted])) found.add(r.id);
    if (fixtures.length > 0) for (const r of await this.q<{ id: string }>("fbExisting", [account, fixtures])) found.add(r.id);
    return found;
  }

  async getFixtureBackend(account: string, id: string): Promise<FixtureBackendRecord | undefined> {
    const [row] = await this.q<FixtureBackendRow>("fbGet", [account, id]);
    return row ? fixtureBackendFromRow(row) : undefined;
  }

  async listFixtureBackends(account: string, type: FixtureBackendType, page: PageQuery): Promise<FixtureBackendRecord[]> {
    const { low, high } = fixtureIdRange(type);
    const rows =
      page.beforeId === undefined
        ? await this.q<FixtureBackendRow>("fbList", [account, low, high, page.limit])
        : await this.q<FixtureBackendRow>("fbListBefore", [account, low, high, page.beforeId, page.limit]);
    return rows.map(fixtureBackendFromRow);
  }

  async ensureBackend(account: string, id: string, fields: ChildBackendFields = {}): Promise<FixtureBackendRecord> {
    const { type, prefix } = fixtureBackendType(id);
    const existing = await this.getFixtureBackend(account, id);
    if (existing) return existing;
    await this.q("fbInsert", [account, id, type, (await this.newId(prefix)).created_at, JSON.stringify(fields)]);
    return (await this.getFixtureBackend(account, id)) as FixtureBackendRecord;
  }

  async createBackend(account: string, type: FixtureBackendType, fields: ChildBackendFields = {}): Promise<FixtureBackendRecord> {
    const { id, created_at } = await this.newId(FIXTURE_BACKEND_TYPES[type]);
    await this.q("fbInsert", [account, id, type, created_at, JSON.stringify(fields)]);
    return { id, type, created_at, fields };
  }

  async getEdge(account: string, id: string): Promise<EdgeRecord | undefined> {
    const [row] = await this.q<EdgeRow>("edgeGet", [account, id]);
    return row ? edgeFromRow(row) : undefined;
  }

  async listEdges(account: string, page: PageQuery): Promise<EdgeRecord[]> {
    const rows =
      page.beforeId === undefined ? await this.q<EdgeRow>("edgeList", [account, page.limit]) : await this.q<EdgeRow>("edgeListBefore", [account, page.beforeId, page.limit]);
    return rows.map(edgeFromRow);
  }

  async ensureEdge(account: string, edgeId?: string, init?: { hostports?: string[] }): Promise<EdgeRecord> {
    checkId(edgeId, ID_PREFIX.edge, "an HTTPS edge");
    if (edgeId !== undefined) {
      const existing = await this.getEdge(account, edgeId);
      if (existing) return existing;
    }
    const made = await this.newId(ID_PREFIX.edge);
    const id = edgeId ?? made.id;
    await this.q("edgeInsert", [account, id, made.created_at, JSON.stringify(init?.hostports ?? [])]);
    return (await this.getEdge(account, id)) as EdgeRecord;
  }

  async getRoute(account: string, edgeId: string, routeId: string, forUpdate = false): Promise<RouteRecord | undefined> {
    const [row] = await this.q<RouteRow>(forUpdate ? "routeGetForUpdate" : "routeGet", [account, routeId]);
    return row && row.edge_id === edgeId ? routeFromRow(row) : undefined;
  }

  async routesOfEdge(account: string, edgeId: string): Promise<RouteRecord[]> {
    return (await this.q<RouteRow>("routesOfEdge", [account, edgeId])).map(routeFromRow);
  }

  async ensureRoute(account: string, edgeId: string, routeId?: string, init?: { match?: string; match_type?: string }): Promise<RouteRecord> {
    checkId(routeId, ID_PREFIX.route, "an HTTPS edge route");
    await this.ensureEdge(account, edgeId);
    const find = async (id: string): Promise<RouteRecord | undefined> => {
      const [row] = await this.q<RouteRow>("routeGet", [account, id]);
      return row ? routeOfEdge(routeFromRow(row), edgeId) : undefined;
    };
    if (routeId !== undefined) {
      const existing = await find(routeId);
      if (existing) return existing;
    }
    const made = await this.newId(ID_PREFIX.route);
    const id = routeId ?? made.id;
    await this.q("routeInsert", [account, id, edgeId, made.created_at, init?.match ?? "/", init?.match_type ?? "path_prefix"]);
    return (await find(id)) as RouteRecord;
  }

  async setSaml(account: string, routeId: string, saml: StoredSaml | null): Promise<void> {
    await this.q("routeSetSaml", [account, routeId, saml === null ? null : JSON.stringify(saml)]);
  }

  async setCircuitBreaker(account: string, routeId: string, cb: CircuitBreakerSettings | null): Promise<void> {
    await this.q("routeSetCb", [account, routeId, cb === null ? null : JSON.stringify(cb)]);
  }

  async fixtureId(account: string, key: string): Promise<string | undefined> {
    const [row] = await this.q<{ id: string }>("fixtureKeyGet", [account, key]);
    return row?.id;
  }

  async setFixtureId(account: string, key: string, id: string): Promise<void> {
    await this.q("fixtureKeySet", [account, key, id]);
  }
}
