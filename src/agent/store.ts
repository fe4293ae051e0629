/**
 * Where the agent keeps what it knows of its stacks (docs/agent.md, "The store"): each stack's status, the history
 * of its last reconciliations, the acknowledgements people gave, the last event each notifier sent, and the runtime
 * overrides of `suspend`. SQLite (a `--data` file, WAL, or memory) for one agent; PostgreSQL (`--database`) for
 * several replicas sharing one database. Documents are JSON text; every write is one statement or one transaction.
 *
 * The engines are opened with the API server's helpers (src/server/sqlite-store.ts, pg-store.ts, pg-schema.ts):
 * the same schema versioning, WAL settings, durable commits and password-free messages. The agent's tables are
 * prefixed `agent_` and versioned on their own, so one PostgreSQL database may also hold the server's.
 */
import type Database from "better-sqlite3";
import type { ClientBase, Pool, PoolClient, QueryResultRow } from "pg";
import type { AckRecord, AgentEvent, HistoryEntry, StackStatus } from "../model/agent.js";
import { EdgeplanError, InternalError } from "../model/errors.js";
import { hold, openSqlite, retire } from "../server/sqlite-store.js";

export interface AgentStore {
  /** Every stack's status, sorted by name (byte order). */
  listStatus(): Promise<StackStatus[]>;
  getStatus(stack: string): Promise<StackStatus | null>;
  /** Upserts the whole document. */
  putStatus(status: StackStatus): Promise<void>;
  /**
   * Appends an entry (seq assigned by the store, increasing) and keeps only the newest `keep` of that stack.
   * `plan_text` and `report` longer than TEXT_LIMIT bytes are cut (see cutText); the entry returned is as stored.
   */
  addHistory(entry: Omit<HistoryEntry, "seq">, keep: number): Promise<HistoryEntry>;
  /** The newest `limit` entries of a stack, newest first. */
  history(stack: string, limit: number): Promise<HistoryEntry[]>;
  /** Records an acknowledgement; the same stack, rule and digest again changes nothing (the first one stays). */
  addAck(ack: AckRecord): Promise<void>;
  /** The acknowledgements of one plan of a stack, sorted by rule. */
  acks(stack: string, digest: string): Promise<AckRecord[]>;
  /** The last event sent by a notifier for a stack (dedupe: the same event is not sent twice in a row). */
  lastEvent(stack: string, notifier: string): Promise<AgentEvent | null>;
  /**
   * Sets it only if it is still `expected` (compare-and-set, so two replicas never both send); returns whether it was
   * set. `next` null forgets it (a delivery that failed gives its event back).
   */
  swapEvent(stack: string, notifier: string, expected: AgentEvent | null, next: AgentEvent | null): Promise<boolean>;
  /** A runtime override of a stack's `suspend` (set by the API's suspend/resume), null when none. */
  suspended(stack: string): Promise<boolean | null>;
  setSuspended(stack: string, suspended: boolean): Promise<void>;
  /** Ends the connections; closing twice is harmless. */
  close(): Promise<void>;
}

/** Where the store lives: `database` (a PostgreSQL URL) wins over `data` (a SQLite file); neither is memory. */
export interface AgentStoreLocation {
  data?: string;
  database?: string;
}

/** The most bytes of a history entry's `plan_text` or `report`: a huge plan cannot fill the disk. */
export const TEXT_LIMIT = 256 * 1024;

/** Room kept under TEXT_LIMIT for the line saying the text was cut. */
const NOTE_ROOM = 200;

/** Connections per agent to PostgreSQL: the agent writes little, and its reconciliations mostly wait for the API. */
const PG_POOL_SIZE = 4;

/**
 * `text` when it is at most `limit` bytes of UTF-8; else its first lines that fit (a line longer than that is cut
 * at a character boundary) and a last line saying how much was cut, the whole at most `limit` bytes.
 */
export function cutText(text: string, limit = TEXT_LIMIT): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= limit) return text;
  let end = Math.max(0, limit - NOTE_ROOM);
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--; // not inside a character
  const head = new TextDecoder().decode(bytes.subarray(0, end));
  const lastLine = head.lastIndexOf("\n");
  const kept = lastLine > 0 ? head.slice(0, lastLine + 1) : `${head}\n`;
  const keptBytes = new TextEncoder().encode(kept).length;
  return `${kept}[cut: ${bytes.length - keptBytes} of ${bytes.length} bytes not kept; the history keeps ${limit} bytes of a plan or report]\n`;
}

/** The entry as stored: its large texts cut. */
function bounded(entry: Omit<HistoryEntry, "seq">): Omit<HistoryEntry, "seq"> {
  const cut = (text: string | null) => (text === null ? null : cutText(text));
  return { ...entry, plan_text: cut(entry.plan_text), report: cut(entry.report) };
}

/** `n` when it is an integer of at least `min`; a caller's bug otherwise. */
function count(n: number, min: number, what: string): number {
  if (!Number.isSafeInteger(n) || n < min) throw new InternalError(`the agent's store was asked for ${what} ${n}; it must be an integer of at least ${min}`);
  return n;
}

/**
 * Opens the store: PostgreSQL at `where.database`, else SQLite in the file `where.data` (created with mode 0600),
 * else SQLite in memory. The schema is created or migrated at open. Throws an EdgeplanError naming the store when
 * it cannot be reached or was written by a newer edgeplan (the URL's password never shown).
 */
export async function openAgentStore(where: AgentStoreLocation): Promise<AgentStore> {
  if (where.database !== undefined) {
    // Loaded only when asked for, as the server does: a SQLite agent never loads the PostgreSQL driver.
    const [{ openPgPool, redactUrl }, { migrateSchema }] = await Promise.all([import("../server/pg-store.js"), import("../server/pg-schema.js")]);
    const setup = (client: ClientBase) => migrateSchema(client, { name: "edgeplan agent", versionTable: "edgeplan_agent_schema", migrations: PG_MIGRATIONS });
    const pool = await openPgPool(where.database, PG_POOL_SIZE, "the agent's store on the database", setup);
    return new PgAgentStore(pool, redactUrl(where.database));
  }
  return openSqlite(where.data, SQLITE_MIGRATIONS, (db, held) => new SqliteAgentStore(db, held, where.data ?? "in memory"), 0o600);
}

/** A failure of the engine after the store was opened, as a message naming the store. */
function storeError(store: string, what: string, err: unknown): EdgeplanError {
  if (err instanceof EdgeplanError) return err;
  return new EdgeplanError(`the agent's store (${store}) could not ${what}: ${(err as Error).message}`, { cause: err });
}

type Row = { doc: string };

function historyFromRow(row: { seq: number | string; doc: string }): HistoryEntry {
  return { seq: Number(row.seq), ...(JSON.parse(row.doc) as Omit<HistoryEntry, "seq">) };
}

// ---------------------------------------------------------------- SQLite

const SQLITE_MIGRATIONS = [
  `
CREATE TABLE IF NOT EXISTS agent_status (stack TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_history (seq INTEGER PRIMARY KEY AUTOINCREMENT, stack TEXT NOT NULL, doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS agent_history_by_stack ON agent_history (stack, seq);
CREATE TABLE IF NOT EXISTS agent_acks (
  stack TEXT NOT NULL, digest TEXT NOT NULL, rule TEXT NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (stack, digest, rule)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_events (
  stack TEXT NOT NULL, notifier TEXT NOT NULL, event TEXT NOT NULL,
  PRIMARY KEY (stack, notifier)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_suspended (stack TEXT PRIMARY KEY, suspended INTEGER NOT NULL) WITHOUT ROWID;
`,
];

/** Every statement of the SQLite store, prepared once. AUTOINCREMENT: a trimmed stack's seq is never given again. */
function prepareSqlite(db: Database.Database) {
  return {
    statusList: db.prepare<[], Row>("SELECT doc FROM agent_status ORDER BY stack"),
    statusGet: db.prepare<[string], Row>("SELECT doc FROM agent_status WHERE stack = ?"),
    statusPut: db.prepare<[string, string]>("INSERT INTO agent_status (stack, doc) VALUES (?, ?) ON CONFLICT (stack) DO UPDATE SET doc = excluded.doc"),
    historyAdd: db.prepare<[string, string], { seq: number }>("INSERT INTO agent_history (stack, doc) VALUES (?, ?) RETURNING seq"),
    historyTrim: db.prepare<[string, string, number]>(
      "DELETE FROM agent_history WHERE stack = ? AND seq <= (SELECT seq FROM agent_history WHERE stack = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
    ),
    history: db.prepare<[string, number], { seq: number; doc: string }>("SELECT seq, doc FROM agent_history WHERE stack = ? ORDER BY seq DESC LIMIT ?"),
    ackAdd: db.prepare<[string, string, string, string]>("INSERT INTO agent_acks (stack, digest, rule, doc) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"),
    acks: db.prepare<[string, string], Row>("SELECT doc FROM agent_acks WHERE stack = ? AND digest = ? ORDER BY rule"),
    eventGet: db.prepare<[string, string], { event: AgentEvent }>("SELECT event FROM agent_events WHERE stack = ? AND notifier = ?"),
    eventInsert: db.prepare<[string, string, string]>("INSERT INTO agent_events (stack, notifier, event) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"),
    eventSwap: db.prepare<[string, string, string, string]>("UPDATE agent_events SET event = ? WHERE stack = ? AND notifier = ? AND event = ?"),
    eventDelete: db.prepare<[string, string, string]>("DELETE FROM agent_events WHERE stack = ? AND notifier = ? AND event = ?"),
    suspendedGet: db.prepare<[string], { suspended: number }>("SELECT suspended FROM agent_suspended WHERE stack = ?"),
    suspendedSet: db.prepare<[string, number]>(
      "INSERT INTO agent_suspended (stack, suspended) VALUES (?, ?) ON CONFLICT (stack) DO UPDATE SET suspended = excluded.suspended",
    ),
  };
}

/**
 * better-sqlite3 answers at once; each method is one statement in its own transaction, or one IMMEDIATE
 * transaction (it takes the write lock first, so two processes on one file wait for each other, up to the
 * busy timeout, instead of failing).
 */
class SqliteAgentStore implements AgentStore {
  private readonly s;
  private readonly addAndTrim;

  constructor(
    private readonly db: Database.Database,
    /** `db` and what was prepared on it outside `s`: what `close` retires (see RETIRED in sqlite-store.ts). */
    private readonly held: object[],
    private readonly where: string,
  ) {
    this.s = prepareSqlite(db);
    this.addAndTrim = hold(
      held,
      db.transaction((stack: string, doc: string, keep: number) => {
        const seq = (this.s.historyAdd.get(stack, doc) as { seq: number }).seq;
        this.s.historyTrim.run(stack, stack, keep);
        return seq;
      }),
    );
  }

  private run<T>(what: string, fn: () => T): Promise<T> {
    try {
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(storeError(this.where, what, err));
    }
  }

  listStatus(): Promise<StackStatus[]> {
    return this.run("list the statuses", () => this.s.statusList.all().map((r) => JSON.parse(r.doc) as StackStatus));
  }

  getStatus(stack: string): Promise<StackStatus | null> {
    return this.run(`read the status of ${stack}`, () => {
      const row = this.s.statusGet.get(stack);
      return row ? (JSON.parse(row.doc) as StackStatus) : null;
    });
  }

  putStatus(status: StackStatus): Promise<void> {
    return this.run(`write the status of ${status.name}`, () => void this.s.statusPut.run(status.name, JSON.stringify(status)));
  }

  addHistory(entry: Omit<HistoryEntry, "seq">, keep: number): Promise<HistoryEntry> {
    const stored = bounded(entry);
    const doc = JSON.stringify(stored);
    return this.run(`add to the history of ${entry.stack}`, () => ({ seq: this.addAndTrim.immediate(entry.stack, doc, count(keep, 1, "keep")), ...stored }));
  }

  history(stack: string, limit: number): Promise<HistoryEntry[]> {
    return this.run(`read the history of ${stack}`, () => this.s.history.all(stack, count(limit, 0, "limit")).map(historyFromRow));
  }

  addAck(ack: AckRecord): Promise<void> {
    return this.run(`record an acknowledgement on ${ack.stack}`, () => void this.s.ackAdd.run(ack.stack, ack.digest, ack.rule, JSON.stringify(ack)));
  }

  acks(stack: string, digest: string): Promise<AckRecord[]> {
    return this.run(`read the acknowledgements of ${stack}`, () => this.s.acks.all(stack, digest).map((r) => JSON.parse(r.doc) as AckRecord));
  }

  lastEvent(stack: string, notifier: string): Promise<AgentEvent | null> {
    return this.run(`read the last event of ${stack}`, () => this.s.eventGet.get(stack, notifier)?.event ?? null);
  }

  swapEvent(stack: string, notifier: string, expected: AgentEvent | null, next: AgentEvent | null): Promise<boolean> {
    return this.run(`record an event of ${stack}`, () => {
      if (expected === null) return next !== null && this.s.eventInsert.run(stack, notifier, next).changes === 1;
      const result = next === null ? this.s.eventDelete.run(stack, notifier, expected) : this.s.eventSwap.run(next, stack, notifier, expected);
      return result.changes === 1;
    });
  }

  suspended(stack: string): Promise<boolean | null> {
    return this.run(`read the suspension of ${stack}`, () => {
      const row = this.s.suspendedGet.get(stack);
      return row ? row.suspended === 1 : null;
    });
  }

  setSuspended(stack: string, suspended: boolean): Promise<void> {
    return this.run(`suspend or resume ${stack}`, () => void this.s.suspendedSet.run(stack, suspended ? 1 : 0));
  }

  close(): Promise<void> {
    if (this.db.open) {
      this.db.close();
      retire(this, ...this.held);
    }
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------- PostgreSQL

/** Stack names sort in byte order, as on SQLite, whatever the database's collation. */
const STACK = 'text COLLATE "C" NOT NULL';

const PG_MIGRATIONS = [
  `
CREATE TABLE agent_status (stack ${STACK} PRIMARY KEY, doc text NOT NULL);
CREATE TABLE agent_history (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stack ${STACK}, doc text NOT NULL);
CREATE INDEX agent_history_by_stack ON agent_history (stack, seq);
CREATE TABLE agent_acks (stack ${STACK}, digest text NOT NULL, rule text NOT NULL, doc text NOT NULL, PRIMARY KEY (stack, digest, rule));
CREATE TABLE agent_events (stack ${STACK}, notifier text NOT NULL, event text NOT NULL, PRIMARY KEY (stack, notifier));
CREATE TABLE agent_suspended (stack ${STACK} PRIMARY KEY, suspended boolean NOT NULL);
`,
];

/** Every statement, by name: each connection prepares a statement once, on its first use. */
const SQL = {
  statusList: "SELECT doc FROM agent_status ORDER BY stack",
  statusGet: "SELECT doc FROM agent_status WHERE stack = $1",
  statusPut: "INSERT INTO agent_status (stack, doc) VALUES ($1, $2) ON CONFLICT (stack) DO UPDATE SET doc = excluded.doc",
  // Entries of one stack are added one at a time (replicas take turns on this lock), so their seq grow in commit
  // order and the trim never leaves more than `keep`.
  historyLock: "SELECT pg_advisory_xact_lock(hashtextextended('edgeplan agent history ' || $1, 0))",
  historyAdd: "INSERT INTO agent_history (stack, doc) VALUES ($1, $2) RETURNING seq",
  historyTrim: "DELETE FROM agent_history WHERE stack = $1 AND seq <= (SELECT seq FROM agent_history WHERE stack = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)",
  history: "SELECT seq, doc FROM agent_history WHERE stack = $1 ORDER BY seq DESC LIMIT $2",
  ackAdd: "INSERT INTO agent_acks (stack, digest, rule, doc) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
  acks: "SELECT doc FROM agent_acks WHERE stack = $1 AND digest = $2 ORDER BY rule",
  eventGet: "SELECT event FROM agent_events WHERE stack = $1 AND notifier = $2",
  // Compare-and-set in one statement: of two replicas inserting, the key lets one in; of two updating, the second
  // waits for the first's row lock, then finds the event no longer `expected` and changes nothing.
  eventInsert: "INSERT INTO agent_events (stack, notifier, event) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
  eventSwap: "UPDATE agent_events SET event = $4 WHERE stack = $1 AND notifier = $2 AND event = $3",
  eventDelete: "DELETE FROM agent_events WHERE stack = $1 AND notifier = $2 AND event = $3",
  suspendedGet: "SELECT suspended FROM agent_suspended WHERE stack = $1",
  suspendedSet: "INSERT INTO agent_suspended (stack, suspended) VALUES ($1, $2) ON CONFLICT (stack) DO UPDATE SET suspended = excluded.suspended",
} as const;

type Statement = keyof typeof SQL;

class PgAgentStore implements AgentStore {
  private closed = false;

  constructor(
    private readonly pool: Pool,
    /** The URL, password hidden, as messages name the store. */
    private readonly where: string,
  ) {}

  private async q<R extends QueryResultRow>(what: string, name: Statement, values: unknown[], client?: ClientBase): Promise<{ rows: R[]; rowCount: number }> {
    try {
      const result = await (client ?? this.pool).query<R>({ name, text: SQL[name], values });
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    } catch (err) {
      throw storeError(this.where, what, err);
    }
  }

  async listStatus(): Promise<StackStatus[]> {
    return (await this.q<Row>("list the statuses", "statusList", [])).rows.map((r) => JSON.parse(r.doc) as StackStatus);
  }

  async getStatus(stack: string): Promise<StackStatus | null> {
    const [row] = (await this.q<Row>(`read the status of ${stack}`, "statusGet", [stack])).rows;
    return row ? (JSON.parse(row.doc) as StackStatus) : null;
  }

  async putStatus(status: StackStatus): Promise<void> {
    await this.q(`write the status of ${status.name}`, "statusPut", [status.name, JSON.stringify(status)]);
  }

  /** `fn` in one transaction on one pooled connection; a connection whose rollback failed is not reused. */
  private async transaction<T>(what: string, fn: (client: ClientBase) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw storeError(this.where, what, err);
    }
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch((e: Error) => (broken = e));
      throw storeError(this.where, what, err);
    } finally {
      client.release(broken);
    }
  }

  async addHistory(entry: Omit<HistoryEntry, "seq">, keep: number): Promise<HistoryEntry> {
    const what = `add to the history of ${entry.stack}`;
    const stored = bounded(entry);
    count(keep, 1, "keep");
    const seq = await this.transaction(what, async (client) => {
      await this.q(what, "historyLock", [entry.stack], client);
      const [row] = (await this.q<{ seq: string }>(what, "historyAdd", [entry.stack, JSON.stringify(stored)], client)).rows;
      await this.q(what, "historyTrim", [entry.stack, keep], client);
      return Number(row?.seq);
    });
    return { seq, ...stored };
  }

  async history(stack: string, limit: number): Promise<HistoryEntry[]> {
    const rows = (await this.q<{ seq: string; doc: string }>(`read the history of ${stack}`, "history", [stack, count(limit, 0, "limit")])).rows;
    return rows.map(historyFromRow);
  }

  async addAck(ack: AckRecord): Promise<void> {
    await this.q(`record an acknowledgement on ${ack.stack}`, "ackAdd", [ack.stack, ack.digest, ack.rule, JSON.stringify(ack)]);
  }

  async acks(stack: string, digest: string): Promise<AckRecord[]> {
    return (await this.q<Row>(`read the acknowledgements of ${stack}`, "acks", [stack, digest])).rows.map((r) => JSON.parse(r.doc) as AckRecord);
  }

  async lastEvent(stack: string, notifier: string): Promise<AgentEvent | null> {
    const [row] = (await this.q<{ event: AgentEvent }>(`read the last event of ${stack}`, "eventGet", [stack, notifier])).rows;
    return row?.event ?? null;
  }

  async swapEvent(stack: string, notifier: string, expected: AgentEvent | null, next: AgentEvent | null): Promise<boolean> {
    const what = `record an event of ${stack}`;
    if (expected === null) return next !== null && (await this.q(what, "eventInsert", [stack, notifier, next])).rowCount === 1;
    const result = next === null ? await this.q(what, "eventDelete", [stack, notifier, expected]) : await this.q(what, "eventSwap", [stack, notifier, expected, next]);
    return result.rowCount === 1;
  }

  async suspended(stack: string): Promise<boolean | null> {
    const [row] = (await this.q<{ suspended: boolean }>(`read the suspension of ${stack}`, "suspendedGet", [stack])).rows;
    return row ? row.suspended : null;
  }

  async setSuspended(stack: string, suspended: boolean): Promise<void> {
    await this.q(`suspend or resume ${stack}`, "suspendedSet", [stack, suspended]);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.pool.end();
  }
}
