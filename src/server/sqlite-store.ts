/**
 * The Store on SQLite (better-sqlite3). With a file, the database runs in WAL mode with `synchronous=NORMAL`:
 * a commit is appended to the WAL with write(2) before the call returns, so a committed transaction survives a
 * crash or `kill -9` of the process; only a crash of the operating system or a power loss can lose the last
 * commits (SQLite's documented WAL guarantee). Without a file the database lives in memory.
 *
 * Every statement is prepared once. better-sqlite3 is synchronous, but a handler awaits the store as it awaits
 * PostgreSQL's, so transactions run one after another, queued, and never interleave: every check a transaction
 * makes holds until it commits. The rate limit is kept in this process: one process owns the file.
 */
import { closeSync, openSync } from "node:fs";
import Database from "better-sqlite3";
import { EdgeplanError } from "../model/errors.js";
import { FIXTURE_BACKEND_TYPES, ID_PREFIX, type CircuitBreakerSettings, type FixtureBackendType } from "../model/wire.js";
import { retryLostRaces, TransactionConflict } from "./contention.js";
import { RateLimiter } from "./faults.js";
import { MonotonicKsuid, rfc3339Seconds } from "./ksuid.js";
import type {
  ChildBackendFields,
  EdgeRecord,
  FixtureBackendRecord,
  PageQuery,
  RateGate,
  RouteRecord,
  Store,
  StoredSaml,
  StoreObserver,
  StoreTx,
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

/** The schema, one step per version; a file at version N gets steps N+1.. at open, in one transaction. */
const MIGRATIONS: SqliteMigration[] = [
  `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS weighted_backends (
  account TEXT NOT NULL, id TEXT NOT NULL, created_at TEXT NOT NULL,
  description TEXT NOT NULL, metadata TEXT NOT NULL, backends TEXT NOT NULL,
  PRIMARY KEY (account, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS backend_children (
  account TEXT NOT NULL, parent TEXT NOT NULL, child TEXT NOT NULL,
  PRIMARY KEY (account, parent, child)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS backend_children_by_child ON backend_children (account, child);
CREATE TABLE IF NOT EXISTS fixture_backends (
  account TEXT NOT NULL, id TEXT NOT NULL, type TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (account, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS edges (
  account TEXT NOT NULL, id TEXT NOT NULL, created_at TEXT NOT NULL,
  description TEXT NOT NULL, metadata TEXT NOT NULL, hostports TEXT NOT NULL,
  PRIMARY KEY (account, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS routes (
  account TEXT NOT NULL, id TEXT NOT NULL, edge_id TEXT NOT NULL, created_at TEXT NOT NULL,
  match TEXT NOT NULL, match_type TEXT NOT NULL, saml TEXT, circuit_breaker TEXT,
  PRIMARY KEY (account, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS routes_by_edge ON routes (account, edge_id, id);
CREATE TABLE IF NOT EXISTS fixture_keys (
  account TEXT NOT NULL, key TEXT NOT NULL, id TEXT NOT NULL,
  PRIMARY KEY (account, key)) WITHOUT ROWID;
`,
  // The SAML signing private key was stored though never used: drop it (secure_delete zeroes the freed bytes).
  `UPDATE routes SET saml = json_remove(saml, '$.private_key_pem') WHERE saml IS NOT NULL;`,
  // The fields a fixture gives a child backend, answered by its get and list ('{}': every field empty). Added only
  // when absent: SQLite has no ADD COLUMN IF NOT EXISTS, and a file whose version was set back must still open.
  (db: Database.Database, held: object[]) => {
    const columns = hold(held, db.prepare<[], { name: string }>("SELECT name FROM pragma_table_info('fixture_backends')")).all();
    if (!columns.some((c) => c.name === "fields")) db.exec("ALTER TABLE fixture_backends ADD COLUMN fields TEXT NOT NULL DEFAULT '{}'");
  },
];

/**
 * Databases and statements of closed stores, kept until the process exits. Node 24's ObjectWrap, which
 * better-sqlite3 12's Database and Statement extend, removes a cleanup hook in its destructor and aborts the process
 * when no JavaScript context is current, as when the garbage collector destroys a wrapper during a microtask
 * checkpoint (`Assertion failed: (env) != nullptr`, `Statement::~Statement`): `edgeplan demo` died so in 14 runs of
 * 20. So no wrapper is ever left to the collector: a store holds every statement it prepares, closing it finalizes
 * the SQLite handles and keeps the store here (a few kilobytes), and Node deletes the wrappers at exit, in a
 * context. better-sqlite3 13, built on Node-API instead, requires Node 22 (engines), and this package supports 20.
 */
const RETIRED: object[] = [];

/** `statement`, kept in `held` (the wrappers of one store: see RETIRED). */
export function hold<T extends object>(held: object[], statement: T): T {
  held.push(statement);
  return statement;
}

/** Keeps the wrappers of a closed store (its database, statements, the store itself) until exit: see RETIRED. */
export function retire(...wrappers: object[]): void {
  RETIRED.push(...wrappers);
}

/** A schema as a list of steps, one per version: SQL, or a function for what SQL alone cannot say. */
export type SqliteMigration = string | ((db: Database.Database, held: object[]) => void);

/**
 * Opens (creating when needed, with `mode` when given) the SQLite file `file`, or a database in memory when `file`
 * is undefined, brings it to the schema of `migrations` and hands it to `make`. With a file the database runs in
 * WAL mode. Throws an EdgeplanError naming the file when it cannot be opened or was written by a newer schema.
 */
export function openSqlite<T>(file: string | undefined, migrations: readonly SqliteMigration[], make: (db: Database.Database, held: object[]) => T, mode?: number): T {
  let db: Database.Database;
  try {
    // SQLite creates the file with the process's umask; its -wal and -shm files later take the file's own mode.
    if (file !== undefined && mode !== undefined) closeSync(openSync(file, "a", mode));
    db = new Database(file ?? ":memory:");
  } catch (err) {
    throw new EdgeplanError(`cannot open the data file ${file}: ${(err as Error).message}; check the path and its permissions`, {
      cause: err,
    });
  }
  const held: object[] = [db];
  try {
    // exec, not pragma(): pragma() prepares a statement that would be left to the garbage collector.
    if (file) db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA busy_timeout = 5000");
    const version = hold(held, db.prepare<[], { user_version: number }>("PRAGMA user_version")).get()?.user_version ?? 0;
    if (version > migrations.length) {
      throw new EdgeplanError(
        `the data file ${file} was written by a newer edgeplan (schema ${version}, this one knows ${migrations.length}); upgrade edgeplan or use another --data file`,
      );
    }
    migrate(db, version, migrations, held);
    return make(db, held);
  } catch (err) {
    if (db.open) db.close();
    RETIRED.push(held);
    throw err;
  }
}

/**
 * Opens (creating when needed) the store in `file`, or in memory when `file` is undefined. Throws an
 * EdgeplanError naming the file when it cannot be opened or was written by a newer schema.
 */
export function openSqliteStore(file?: string): SqliteStore {
  return openSqlite(file, MIGRATIONS, (db, held) => new SqliteStore(db, file, held));
}

export class SqliteStore implements Store, StoreTx {
  readonly kind = "sqlite";
  observer: StoreObserver | undefined;
  private readonly ids: MonotonicKsuid;
  private readonly s;
  /** The end of the queue of transactions: each one starts when the one before has ended. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Database.Database,
    readonly file: string | undefined,
    /** `db` and every statement prepared on it but those of `s`: what `close` retires (see RETIRED). */
    private readonly held: object[] = [db],
  ) {
    this.s = prepare(db);
    // Ids stay monotonic across restarts: the generator continues after the last id this file recorded.
    this.ids = new MonotonicKsuid(this.s.metaGet.get("last_ksuid")?.value);
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    const attempt = async (): Promise<T> => {
      this.db.exec("BEGIN");
      try {
        const result = await fn(this);
        this.db.exec("COMMIT");
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec("ROLLBACK");
        throw err;
      }
    };
    // The file's write lock held by another program (SQLite answers at once when a reading transaction cannot start
    // writing, else after busy_timeout) is a race this transaction lost, like a deadlock on PostgreSQL.
    const run = (): Promise<T> =>
      retryLostRaces(attempt, (err) => err instanceof TransactionConflict || /^SQLITE_(BUSY|LOCKED)/.test((err as { code?: string }).code ?? ""), {
        observer: this.observer,
        raceReason: (err) => (err instanceof TransactionConflict ? "graph_lock" : "database_busy"),
      });
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Runs `fn` at once in one transaction, for seeding a file before a server opens it (benchmarks, tests). */
  syncTransaction<T>(fn: () => T): T {
    // Nested calls join the outer transaction (better-sqlite3 turns them into savepoints).
    return this.db.transaction(fn)();
  }

  lockAccount(): void {
    // Transactions already run one at a time.
  }

  lockGraph(): void {
    // Transactions already run one at a time.
  }

  rateGate(count: number, windowMs: number): RateGate {
    return new RateLimiter(count, windowMs);
  }

  newId(prefix: string): { id: string; created_at: string } {
    const { body, seconds } = this.ids.next();
    this.s.metaSet.run("last_ksuid", body);
    return { id: `${prefix}_${body}`, created_at: rfc3339Seconds(seconds) };
  }

  getWeightedBackend(account: string, id: string): WeightedBackendRecord | undefined {
    const row = this.s.wbGet.get(account, id);
    return row ? weightedFromRow(row) : undefined;
  }

  listWeightedBackends(account: string, page: PageQuery): WeightedBackendRecord[] {
    const rows = page.beforeId === undefined ? this.s.wbList.all(account, page.limit) : this.s.wbListBefore.all(account, page.beforeId, page.limit);
    return rows.map(weightedFromRow);
  }

  countWeightedBackends(account: string): number {
    return this.s.wbCount.get(account)?.n ?? 0;
  }

  insertWeightedBackend(account: string, r: WeightedBackendRecord): void {
    this.s.wbInsert.run(account, r.id, r.created_at, r.description, r.metadata, JSON.stringify(r.backends));
    for (const child of Object.keys(r.backends)) this.s.childInsert.run(account, r.id, child);
  }

  updateWeightedBackend(account: string, r: WeightedBackendRecord): void {
    this.s.wbUpdate.run(r.description, r.metadata, JSON.stringify(r.backends), account, r.id);
    this.s.childrenDelete.run(account, r.id);
    for (const child of Object.keys(r.backends)) this.s.childInsert.run(account, r.id, child);
  }

  deleteWeightedBackend(account: string, id: string): boolean {
    const changed = this.s.wbDelete.run(account, id).changes > 0;
    this.s.childrenDelete.run(account, id);
    return changed;
  }

  parentsOf(account: string, childId: string, limit: number): string[] {
    return this.s.parents.all(account, childId, limit).map((r) => r.parent);
  }

  weightedChildrenOf(account: string, id: string): string[] {
    return this.s.weightedChildren.all(account, id).map((r) => r.child);
  }

  existingBackends(account: string, ids: string[]): Set<string> {
    const weighted = `${ID_PREFIX.weightedBackend}_`;
    return new Set(ids.filter((id) => (id.startsWith(weighted) ? this.s.wbExists.get(account, id) : this.s.fbGet.get(account, id)) !== undefined));
  }

  getFixtureBackend(account: string, id: string): FixtureBackendRecord | undefined {
    const row = this.s.fbGet.get(account, id);
    return row ? fixtureBackendFromRow(row) : undefined;
  }

  listFixtureBackends(account: string, type: FixtureBackendType, page: PageQuery): FixtureBackendRecord[] {
    const { low, high } = fixtureIdRange(type);
    const rows = page.beforeId === undefined ? this.s.fbList.all(account, low, high, page.limit) : this.s.fbListBefore.all(account, low, high, page.beforeId, page.limit);
    return rows.map(fixtureBackendFromRow);
  }

  ensureBackend(account: string, id: string, fields: ChildBackendFields = {}): FixtureBackendRecord {
    const { type, prefix } = fixtureBackendType(id);
    return this.syncTransaction(() => {
      const existing = this.getFixtureBackend(account, id);
      if (existing) return existing;
      const record: FixtureBackendRecord = { id, type, created_at: this.newId(prefix).created_at, fields };
      this.s.fbInsert.run(account, id, type, record.created_at, JSON.stringify(fields));
      return record;
    });
  }

  createBackend(account: string, type: FixtureBackendType, fields: ChildBackendFields = {}): FixtureBackendRecord {
    return this.syncTransaction(() => {
      const { id, created_at } = this.newId(FIXTURE_BACKEND_TYPES[type]);
      this.s.fbInsert.run(account, id, type, created_at, JSON.stringify(fields));
      return { id, type, created_at, fields };
    });
  }

  getEdge(account: string, id: string): EdgeRecord | undefined {
    const row = this.s.edgeGet.get(account, id);
    return row ? edgeFromRow(row) : undefined;
  }

  listEdges(account: string, page: PageQuery): EdgeRecord[] {
    const rows = page.beforeId === undefined ? this.s.edgeList.all(account, page.limit) : this.s.edgeListBefore.all(account, page.beforeId, page.limit);
    return rows.map(edgeFromRow);
  }

  ensureEdge(account: string, edgeId?: string, init?: { hostports?: string[] }): EdgeRecord {
    checkId(edgeId, ID_PREFIX.edge, "an HTTPS edge");
    return this.syncTransaction(() => {
      if (edgeId !== undefined) {
        const existing = this.getEdge(account, edgeId);
        if (existing) return existing;
      }
      const made = this.newId(ID_PREFIX.edge);
      const record: EdgeRecord = {
        id: edgeId ?? made.id,
        created_at: made.created_at,
        description: "",
        metadata: "",
        hostports: init?.hostports ?? [],
      };
      this.s.edgeInsert.run(account, record.id, record.created_at, "", "", JSON.stringify(record.hostports));
      return record;
    });
  }

  getRoute(account: string, edgeId: string, routeId: string): RouteRecord | undefined {
    const row = this.s.routeGet.get(account, routeId);
    return row && row.edge_id === edgeId ? routeFromRow(row) : undefined;
  }

  routesOfEdge(account: string, edgeId: string): RouteRecord[] {
    return this.s.routesOfEdge.all(account, edgeId).map(routeFromRow);
  }

  ensureRoute(account: string, edgeId: string, routeId?: string, init?: { match?: string; match_type?: string }): RouteRecord {
    checkId(routeId, ID_PREFIX.route, "an HTTPS edge route");
    return this.syncTransaction(() => {
      this.ensureEdge(account, edgeId);
      if (routeId !== undefined) {
        const row = this.s.routeGet.get(account, routeId);
        if (row) {
          return routeOfEdge(routeFromRow(row), edgeId);
        }
      }
      const made = this.newId(ID_PREFIX.route);
      const record: RouteRecord = {
        id: routeId ?? made.id,
        edge_id: edgeId,
        created_at: made.created_at,
        match: init?.match ?? "/",
        match_type: init?.match_type ?? "path_prefix",
        saml: null,
        circuit_breaker: null,
      };
      this.s.routeInsert.run(account, record.id, edgeId, record.created_at, record.match, record.match_type);
      return record;
    });
  }

  setSaml(account: string, routeId: string, saml: StoredSaml | null): void {
    this.s.routeSetSaml.run(saml === null ? null : JSON.stringify(saml), account, routeId);
  }

  setCircuitBreaker(account: string, routeId: string, cb: CircuitBreakerSettings | null): void {
    this.s.routeSetCb.run(cb === null ? null : JSON.stringify(cb), account, routeId);
  }

  fixtureId(account: string, key: string): string | undefined {
    return this.s.fixtureKeyGet.get(account, key)?.id;
  }

  setFixtureId(account: string, key: string, id: string): void {
    this.s.fixtureKeySet.run(account, key, id);
  }

  /** A query outside the transaction queue: better-sqlite3 answers at once, or throws (file gone, closed). */
  ping(): Promise<void> {
    try {
      this.s.ping.get();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  close(): Promise<void> {
    if (this.db.open) {
      this.db.close();
      // Every wrapper it made: its database and `s` through the store, and the statements of `held`.
      RETIRED.push(this, ...this.held);
    }
    return Promise.resolve();
  }
}

/** Every statement of the store, prepared once. */
function prepare(db: Database.Database) {
  return {
    ping: db.prepare<[], { one: number }>("SELECT 1 AS one"),
    metaGet: db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?"),
    metaSet: db.prepare<[string, string]>("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
    wbGet: db.prepare<[string, string], WeightedRow>("SELECT id, created_at, description, metadata, backends FROM weighted_backends WHERE account = ? AND id = ?"),
    wbList: db.prepare<[string, number], WeightedRow>(
      "SELECT id, created_at, description, metadata, backends FROM weighted_backends WHERE account = ? ORDER BY id DESC LIMIT ?",
    ),
    wbListBefore: db.prepare<[string, string, number], WeightedRow>(
      "SELECT id, created_at, description, metadata, backends FROM weighted_backends WHERE account = ? AND id < ? ORDER BY id DESC LIMIT ?",
    ),
    wbCount: db.prepare<[string], { n: number }>("SELECT count(*) AS n FROM weighted_backends WHERE account = ?"),
    wbInsert: db.prepare<[string, string, string, string, string, string]>(
      "INSERT INTO weighted_backends (account, id, created_at, description, metadata, backends) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    wbUpdate: db.prepare<[string, string, string, string, string]>("UPDATE weighted_backends SET description = ?, metadata = ?, backends = ? WHERE account = ? AND id = ?"),
    wbDelete: db.prepare<[string, string]>("DELETE FROM weighted_backends WHERE account = ? AND id = ?"),
    childrenDelete: db.prepare<[string, string]>("DELETE FROM backend_children WHERE account = ? AND parent = ?"),
    childInsert: db.prepare<[string, string, string]>("INSERT INTO backend_children (account, parent, child) VALUES (?, ?, ?)"),
    parents: db.prepare<[string, string, number], { parent: string }>("SELECT parent FROM backend_children WHERE account = ? AND child = ? ORDER BY parent LIMIT ?"),
    weightedChildren: db.prepare<[string, string], { child: string }>(
      "SELECT child FROM backend_children WHERE account = ? AND parent = ? AND child >= 'bkdwd_' AND child < 'bkdwd`'",
    ),
    wbExists: db.prepare<[string, string], { one: number }>("SELECT 1 AS one FROM weighted_backends WHERE account = ? AND id = ?"),
    fbGet: db.prepare<[string, string], FixtureBackendRow>("SELECT id, type, created_at, fields FROM fixture_backends WHERE account = ? AND id = ?"),
    fbList: db.prepare<[string, string, string, number], FixtureBackendRow>(
      "SELECT id, type, created_at, fields FROM fixture_backends WHERE account = ? AND id > ? AND id < ? ORDER BY id DESC LIMIT ?",
    ),
    fbListBefore: db.prepare<[string, string, string, string, number], FixtureBackendRow>(
      "SELECT id, type, created_at, fields FROM fixture_backends WHERE account = ? AND id > ? AND id < ? AND id < ? ORDER BY id DESC LIMIT ?",
    ),
    fbInsert: db.prepare<[string, string, string, string, string]>("INSERT INTO fixture_backends (account, id, type, created_at, fields) VALUES (?, ?, ?, ?, ?)"),
    edgeGet: db.prepare<[string, string], EdgeRow>("SELECT id, created_at, description, metadata, hostports FROM edges WHERE account = ? AND id = ?"),
    edgeList: db.prepare<[string, number], EdgeRow>("SELECT id, created_at, description, metadata, hostports FROM edges WHERE account = ? ORDER BY id DESC LIMIT ?"),
    edgeListBefore: db.prepare<[string, string, number], EdgeRow>(
      "SELECT id, created_at, description, metadata, hostports FROM edges WHERE account = ? AND id < ? ORDER BY id DESC LIMIT ?",
    ),
    edgeInsert: db.prepare<[string, string, string, string, string, string]>(
      "INSERT INTO edges (account, id, created_at, description, metadata, hostports) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    routeGet: db.prepare<[string, string], RouteRow>("SELECT id, edge_id, created_at, match, match_type, saml, circuit_breaker FROM routes WHERE account = ? AND id = ?"),
    // Without statistics, SQLite prefers walking the account's whole primary key (already in id order) to the
    // index, which made every edge read cost as much as reading every route of the account.
    routesOfEdge: db.prepare<[string, string], RouteRow>(
      "SELECT id, edge_id, created_at, match, match_type, saml, circuit_breaker FROM routes INDEXED BY routes_by_edge WHERE account = ? AND edge_id = ? ORDER BY id",
    ),
    routeInsert: db.prepare<[string, string, string, string, string, string]>(
      "INSERT INTO routes (account, id, edge_id, created_at, match, match_type) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    routeSetSaml: db.prepare<[string | null, string, string]>("UPDATE routes SET saml = ? WHERE account = ? AND id = ?"),
    routeSetCb: db.prepare<[string | null, string, string]>("UPDATE routes SET circuit_breaker = ? WHERE account = ? AND id = ?"),
    fixtureKeyGet: db.prepare<[string, string], { id: string }>("SELECT id FROM fixture_keys WHERE account = ? AND key = ?"),
    fixtureKeySet: db.prepare<[string, string, string]>(
      "INSERT INTO fixture_keys (account, key, id) VALUES (?, ?, ?) ON CONFLICT (account, key) DO UPDATE SET id = excluded.id",
    ),
  };
}

/** Brings the file from schema `version` to the last of `migrations` in one transaction. */
function migrate(db: Database.Database, version: number, migrations: readonly SqliteMigration[], held: object[]): void {
  if (version === migrations.length) return;
  db.exec("PRAGMA secure_delete = ON");
  db.transaction(() => {
    for (const step of migrations.slice(version)) {
      if (typeof step === "string") db.exec(step);
      else step(db, held);
    }
    db.exec(`PRAGMA user_version = ${migrations.length}`);
  })();
  db.exec("PRAGMA secure_delete = OFF");
}
