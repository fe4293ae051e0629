/**
 * A throwaway PostgreSQL cluster for the tests and the `server-pg` benchmark: `initdb` into a temporary folder, `postgres` on a free loopback
 * port, stopped and removed afterwards. Never a shared server. Run as root (as in CI), the cluster runs as the
 * `postgres` user, since PostgreSQL refuses to run as root.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/** The folder of `initdb`: $EDGEPLAN_PG_BIN, the newest /usr/lib/postgresql/N/bin (Debian), or the PATH. */
export function findPostgresBin(): string | undefined {
  const fromEnv = process.env.EDGEPLAN_PG_BIN;
  if (fromEnv) return existsSync(join(fromEnv, "initdb")) ? fromEnv : undefined;
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(join(debian, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(debian, versions[0], "bin");
  }
  const which = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" });
  const found = which.stdout.trim();
  return which.status === 0 && found ? found.slice(0, found.lastIndexOf("/")) : undefined;
}

/** Whether the `postgres` test project runs: PostgreSQL is installed, or CI=true requires it (then it fails without). */
export function postgresTestsRun(): boolean {
  return findPostgresBin() !== undefined || process.env.CI === "true";
}

/** Said at the start and at the end of a test run that skips the PostgreSQL project. */
export const POSTGRES_SKIPPED =
  "\n*** SKIPPED: the server suites on PostgreSQL (no initdb found under /usr/lib/postgresql/*/bin, $EDGEPLAN_PG_BIN or the PATH).\n" +
  "*** Install PostgreSQL (apt-get install postgresql) to run them; under CI=true they fail instead of being skipped.\n\n";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port;
      probe.close(() => resolve(port));
    });
  });
}

export interface Cluster {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication on loopback). */
  url: string;
  /** Stops the server and removes its folder. */
  stop(): void;
  /** Stops the server (fast shutdown: connections are cut), keeping its data, as an outage would. */
  halt(): void;
  /** Starts the halted server again on the same port, with the same data. */
  resume(): void;
}

/** Starts a cluster; throws with PostgreSQL's own output when it cannot. */
export async function startCluster(bin: string): Promise<Cluster> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-pg-"));
  const asOwner = (cmd: string, args: string[]): void => {
    const [file, argv] = root ? ["runuser", ["-u", "postgres", "--", join(bin, cmd), ...args]] : [join(bin, cmd), args];
    execFileSync(file as string, argv as string[], { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  };
  if (root) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const port = await freePort();
  const stop = (): void => {
    try {
      asOwner("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {
      // Not running (start failed): nothing to stop.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=64MB -c deadlock_timeout=100ms`;
  const start = (): void => asOwner("pg_ctl", ["-D", data, "-o", settings, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  try {
    asOwner("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]);
    start();
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    stop();
    throw new Error(`could not start a PostgreSQL cluster with ${bin}: ${e.stderr?.toString() || e.message}`);
  }
  const halt = (): void => asOwner("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop, halt, resume: start };
}

/** Creates a new, empty database in the cluster of `adminUrl` (named `prefix` + random hex); returns its URL. */
export async function createDatabase(adminUrl: string, prefix = "t_"): Promise<string> {
  const name = `${prefix}${randomBytes(8).toString("hex")}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
