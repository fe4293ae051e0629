/**
 * A git source of the agent (docs/agent.md): fetched with the `git` binary (never a shell), shallow, with a timeout,
 * into a bare repository of the agent's cache; a commit's files are written from that object store into a folder of
 * the agent's own, never read from a work tree. Credentials come from files or variables at fetch time and reach git
 * through its environment, never its command line; no message carries them.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { AgentSource, Revision } from "../model/agent.js";
import { EdgeplanError } from "../model/errors.js";
import { readSecret } from "./accounts.js";

/** A source that could not be fetched, read or written out. */
export class SourceError extends EdgeplanError {
  override name = "SourceError";
}

/** A commit refused by verification: unsigned, or signed by a key the allowed-signers file does not hold. */
export class UnverifiedCommitError extends SourceError {
  override name = "UnverifiedCommitError";
}

/** The URL forms the agent fetches; anything else (git's `ext::`, `fd::`, an option) is refused. */
const ALLOWED_URL = /^(https:\/\/|ssh:\/\/|file:\/\/|\/)/;

export class GitSource {
  private readonly repo: string;

  constructor(
    private readonly source: AgentSource,
    cacheDir: string,
    private readonly env: Record<string, string | undefined>,
  ) {
    this.repo = join(cacheDir, `${source.name}.git`);
  }

  /** Fetches `ref` (depth 1) and returns its commit. */
  async fetch(signal?: AbortSignal): Promise<Revision> {
    const { url, ref, name } = this.source;
    if (!ALLOWED_URL.test(url)) throw new SourceError(`source ${name}: the URL must start with https://, ssh://, file:// or /, got ${redactUrl(url)}`);
    if (!existsSync(join(this.repo, "HEAD"))) {
      await mkdir(this.repo, { recursive: true, mode: 0o700 });
      await this.git(["init", "--bare", "-q"], signal);
    }
    const target = `refs/edgeplan/${name}`;
    await this.git(["fetch", "--depth", "1", "--no-tags", "--force", "--", url, `+${ref}:${target}`], signal, await this.credentials());
    const [sha = "", author = "", at = "", subject = ""] = (await this.git(["log", "-1", "--format=%H%x00%an%x00%cI%x00%s", target], signal)).trim().split("\0");
    return { sha, author, subject, at };
  }

  /** Refuses the commit unless it is signed (SSH) by a key of the allowed-signers file. */
  async verify(sha: string): Promise<void> {
    const file = this.source.allowedSignersFile;
    if (!file) return;
    const refused = (why: string) => new UnverifiedCommitError(`source ${this.source.name}: commit ${sha.slice(0, 12)} is refused: ${why}`);
    // git says nothing for an unsigned commit: its object tells.
    if (!/^gpgsig /m.test(await this.git(["cat-file", "commit", sha]))) throw refused("it is not signed");
    try {
      await this.git(["-c", "gpg.format=ssh", "-c", `gpg.ssh.allowedSignersFile=${file}`, "verify-commit", sha]);
    } catch {
      throw refused(`its signature is not by a key of ${file}`);
    }
  }

  /** Writes the files of commit `sha` into `dest` (an empty folder of the caller's), from the object store only. */
  async snapshot(sha: string, dest: string): Promise<void> {
    // An index of this source's own: two sources at the same commit write their snapshots at once.
    const index = join(this.repo, `snapshot-index-${sha}`);
    try {
      await this.git(["--work-tree", dest, "read-tree", sha], undefined, { GIT_INDEX_FILE: index });
      await this.git(["--work-tree", dest, "checkout-index", "-a", "-f"], undefined, { GIT_INDEX_FILE: index });
    } finally {
      await rm(index, { force: true });
    }
  }

  /** What git needs to reach the URL: an askpass for https, a key and known hosts for ssh; none for a path. */
  private async credentials(): Promise<Record<string, string>> {
    const s = this.source;
    const out: Record<string, string> = {};
    if (s.password) {
      out.EDGEPLAN_GIT_USERNAME = s.username ?? "git";
      out.EDGEPLAN_GIT_PASSWORD = await readSecret(s.password, this.env, `source ${s.name}: the password`);
      out.GIT_ASKPASS = await this.askpass();
    }
    if (s.sshKeyFile) {
      const known = s.knownHostsFile ? ` -o UserKnownHostsFile=${quote(s.knownHostsFile)}` : "";
      out.GIT_SSH_COMMAND = `ssh -i ${quote(s.sshKeyFile)} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes${known}`;
    }
    return out;
  }

  /** A script git runs for the user name and password: it prints them from its own environment. */
  private async askpass(): Promise<string> {
    const file = join(this.repo, "askpass.sh");
    if (!existsSync(file)) {
      const { writeFile } = await import("node:fs/promises");
      await writeFile(file, '#!/bin/sh\ncase "$1" in\n  Username*) printf "%s\\n" "$EDGEPLAN_GIT_USERNAME" ;;\n  *) printf "%s\\n" "$EDGEPLAN_GIT_PASSWORD" ;;\nesac\n', {
        mode: 0o700,
      });
    }
    return file;
  }

  /** Runs git in the cache's repository, with a clean environment and the source's timeout; output on success. */
  private git(args: string[], signal?: AbortSignal, extra: Record<string, string> = {}): Promise<string> {
    const env = {
      PATH: this.env.PATH ?? "/usr/bin:/bin",
      HOME: this.repo,
      GIT_DIR: this.repo,
      GIT_TERMINAL_PROMPT: "0",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_PROTOCOL_FROM_USER: "0",
      GIT_ALLOW_PROTOCOL: "file:https:ssh",
      ...extra,
    };
    const secrets = [extra.EDGEPLAN_GIT_PASSWORD].filter((v): v is string => Boolean(v));
    return new Promise((resolve, reject) => {
      execFile(
        "git",
        args,
        { env, timeout: this.source.timeoutMs, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, ...(signal ? { signal } : {}) },
        (err, stdout, stderr) => {
          if (!err) return resolve(stdout);
          const timedOut = (err as { killed?: boolean }).killed === true;
          const what = timedOut ? `no answer within ${this.source.timeoutMs} ms` : clean(stderr || err.message, secrets);
          reject(new SourceError(`source ${this.source.name}: git ${args.find((a) => !a.startsWith("-")) ?? ""} failed: ${what}`));
        },
      );
    });
  }
}

/** `https://user:pass@host/x` -> `https://***@host/x`. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z]+:\/\/)[^/@\s]+@/gi, "$1***@");
}

/** git's stderr as one short line, with credentials removed. */
function clean(text: string, secrets: string[]): string {
  let out = redactUrl(text);
  for (const s of secrets) out = out.split(s).join("***");
  return out.trim().split("\n").slice(-3).join("; ").slice(0, 500);
}

function quote(path: string): string {
  return `'${path.replace(/'/g, "'\\''")}'`;
}
