/**
 * The PostgreSQL schema, one migration per version. `migrate` runs at start in one transaction under an advisory
 * lock, so of several replicas starting at once one migrates and the others find the work done; a database whose
 * schema is newer than this edgeplan knows is refused, changing nothing.
 *
 * Ids are `text COLLATE "C"`: base62 KSUIDs sort by time in byte order, whatever the database's own collation.
 * JSON columns are text, so that a map keeps its key order (jsonb would reorder it).
 */
import type { ClientBase } from "pg";
import { EdgeplanError } from "../model/errors.js";

/** The key of the advisory lock held while migrating and while loading fixtures. */
export const STARTUP_LOCK = 0x65646765; // "edge"

const ID = 'text COLLATE "C" NOT NULL';

const MIGRATIONS = [
  `
CREATE TABLE weighted_backends (
  account ${ID}, id ${ID}, created_at text NOT NULL,
  description text NOT NULL, metadata text NOT NULL, backends text NOT NULL,
  PRIMARY KEY (account, id));
CREATE TABLE backend_children (
  account ${ID}, parent ${ID}, child ${ID},
  PRIMARY KEY (account, parent, child));
CREATE INDEX backend_children_by_child ON backend_children (account, child);
CREATE TABLE fixture_backends (
  account ${ID}, id ${ID}, type text NOT NULL, created_at text NOT NULL,
  PRIMARY KEY (account, id));
CREATE TABLE edges (
  account ${ID}, id ${ID}, created_at text NOT NULL,
  description text NOT NULL, metadata text NOT NULL, hostports text NOT NULL,
  PRIMARY KEY (account, id));
CREATE TABLE routes (
  account ${ID}, id ${ID}, edge_id ${ID}, created_at text NOT NULL,
  match text NOT NULL, match_type text NOT NULL, saml text, circuit_breaker text,
  PRIMARY KEY (account, id));
CREATE INDEX routes_by_edge ON routes (account, edge_id, id);
CREATE TABLE fixture_keys (
  account ${ID}, key text NOT NULL, id ${ID},
  PRIMARY KEY (account, key));
CREATE TABLE rate_limits (
  account ${ID} PRIMARY KEY, times bigint[] NOT NULL, admitted boolean NOT NULL);
CREATE SEQUENCE edgeplan_ids;
`,
  // The fields a fixture gives a child backend, answered by its get and list ('{}': every field empty).
  `ALTER TABLE fixture_backends ADD COLUMN fields text NOT NULL DEFAULT '{}';`,
];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** A schema kept in its own version table, so that several (the server's, the agent's) can share one database. */
export interface PgSchema {
  /** Said in messages: `edgeplan`, `edgeplan agent`. */
  name: string;
  /** The one-row table holding the version. */
  versionTable: string;
  /** One step per version. */
  migrations: readonly string[];
}

const SERVER_SCHEMA: PgSchema = { name: "edgeplan", versionTable: "edgeplan_schema", migrations: MIGRATIONS };

/**
 * Brings the database to PG_SCHEMA_VERSION. `client` must not be in a transaction; this opens and commits one.
 * Throws an EdgeplanError when the database's schema is newer than this edgeplan's.
 */
export function migrate(client: ClientBase): Promise<void> {
  return migrateSchema(client, SERVER_SCHEMA);
}

/** Brings `schema` to its last version, as `migrate` does; the same advisory lock serialises every schema's start. */
export async function migrateSchema(client: ClientBase, schema: PgSchema): Promise<void> {
  const last = schema.migrations.length;
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [STARTUP_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${schema.versionTable} (version integer NOT NULL)`);
    const found = await client.query<{ version: number }>(`SELECT version FROM ${schema.versionTable}`);
    const version = found.rows[0]?.version ?? 0;
    if (version > last) {
      throw new EdgeplanError(
        `the database has ${schema.name} schema ${version}, newer than this edgeplan knows (${last}); upgrade edgeplan, or point --database at another database`,
      );
    }
    for (const step of schema.migrations.slice(version)) await client.query(step);
    if (found.rows.length === 0) await client.query(`INSERT INTO ${schema.versionTable} (version) VALUES ($1)`, [last]);
    else await client.query(`UPDATE ${schema.versionTable} SET version = $1`, [last]);
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK");
    throw err;
  }
}
