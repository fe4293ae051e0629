/**
 * What the agent's end-to-end tests share: a bare git repository made with `git` and a clone to commit from, weighted
 * backend manifests over two child backends of the fixtures, and a bounded poll.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const CHILDREN = [1, 2].map((n) => `bkdhr_${String(n).padStart(27, "0")}`) as [string, string];
export const FIXTURES = `backends:\n${CHILDREN.map((id) => `  - {id: ${id}, type: http_response}`).join("\n")}\n`;

/** A weighted backend manifest over the two children, with `extra` lines at the end (a rollout). */
export function wb(name: string, a: number | string, b: number, extra = ""): string {
  return `kind: WeightedBackend\nname: ${name}\ndescription: ${name}\nbackends:\n  ${CHILDREN[0]}: ${a}\n  ${CHILDREN[1]}: ${b}\n${extra}`;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1" } });
}

/** An SSH key pair made with `ssh-keygen` in `dir`: the private key's file and the public key's line. */
export function keyPair(dir: string, name: string): { key: string; pub: string } {
  const key = join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key]);
  return { key, pub: readFileSync(`${key}.pub`, "utf8").trim() };
}

/**
 * A bare repository `<dir>/routing.git` (branch main) and a clone of it; `commit` writes files, commits (signed with
 * the SSH key file `signingKey` when given) and pushes.
 */
export function makeRepo(dir: string): { bare: string; commit(files: Record<string, string>, subject: string, signingKey?: string): string } {
  const bare = join(dir, "routing.git");
  const work = join(dir, "work");
  git(dir, "init", "-q", "--bare", "-b", "main", bare);
  git(dir, "clone", "-q", bare, work);
  return {
    bare,
    commit(files, subject, signingKey) {
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(join(work, file, ".."), { recursive: true });
        writeFileSync(join(work, file), text);
      }
      git(work, "add", "-A");
      const sign = signingKey ? ["-c", "gpg.format=ssh", "-c", `user.signingkey=${signingKey}`, "commit", "-qS"] : ["commit", "-q"];
      git(work, "-c", "user.name=Ann Example", "-c", "user.email=ann@example.com", ...sign, "-m", subject);
      git(work, "push", "-q", "origin", "HEAD:main");
      return git(work, "rev-parse", "HEAD").trim();
    },
  };
}

/**
 * Polls `check` every 100 ms until it returns a value (not undefined), for at most `ms`; then throws naming `what`,
 * with `context()` (what the process under test printed) when given.
 */
export async function until<T>(what: string, ms: number, check: () => Promise<T | undefined>, context?: () => string): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (let i = 0; i < ms / 100 + 1 && Date.now() < end; i++) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within ${ms} ms${last ? ` (${String(last)})` : ""}${context ? `\n${context()}` : ""}`);
}
