/**
 * The agent's git sources (src/agent/source.ts), with the real `git` and `ssh-keygen`: a fetch names the commit, a
 * snapshot writes that commit's files whatever the branch became, verification refuses an unsigned commit and one
 * signed by a key not allowed, and a failure never shows a credential.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GitSource } from "../../src/agent/source.js";
import type { AgentSource } from "../../src/model/agent.js";
import { tempDir } from "../reliability/cli.js";
import { git, makeRepo } from "./world.js";

const dir = tempDir("agent-source");
afterAll(() => dir.remove());
const env = { PATH: process.env.PATH };

function source(over: Partial<AgentSource>): AgentSource {
  return { name: "routing", url: join(dir.path, "routing.git"), ref: "main", intervalMs: 60_000, timeoutMs: 10_000, ...over };
}

function keyPair(name: string): { key: string; pub: string } {
  const key = join(dir.path, name);
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key]);
  return { key, pub: readFileSync(`${key}.pub`, "utf8").trim() };
}

describe("a git source", () => {
  const repo = makeRepo(dir.path);
  const first = repo.commit({ "prod/a.yaml": "one\n" }, "first");

  it("fetches the ref's commit, and a snapshot holds that commit's files after the branch moved on", async () => {
    const s = new GitSource(source({}), join(dir.path, "cache"), env);
    expect(await s.fetch()).toEqual({ sha: first, author: "Ann Example", subject: "first", at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    const second = repo.commit({ "prod/a.yaml": "two\n" }, "second");
    expect((await s.fetch()).sha).toBe(second);
    const snap = join(dir.path, "snap");
    mkdirSync(snap);
    await s.snapshot(first, snap);
    expect(readFileSync(join(snap, "prod", "a.yaml"), "utf8")).toBe("one\n");
  });

  it("names the ref and the source when the ref does not exist, and refuses a URL git would run a command for", async () => {
    await expect(new GitSource(source({ ref: "nope" }), join(dir.path, "cache2"), env).fetch()).rejects.toThrow(/^source routing: git fetch failed: .*nope/);
    await expect(new GitSource(source({ url: "ext::sh -c touch% /tmp/pwned" }), join(dir.path, "cache3"), env).fetch()).rejects.toThrow(
      "source routing: the URL must start with https://, ssh://, file:// or /, got ext::sh -c touch% /tmp/pwned",
    );
  });

  it("never shows the password of an https source in its error", async () => {
    const password = "canary-git-token-5521";
    const s = new GitSource(source({ url: "https://bot@127.0.0.1:1/r.git", password: { env: "GIT_TOKEN" }, timeoutMs: 5000 }), join(dir.path, "cache4"), {
      ...env,
      GIT_TOKEN: password,
    });
    const err = await s.fetch().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/^source routing: git fetch failed: /);
    expect(err?.message).not.toContain(password);
    expect(err?.message).not.toContain("bot@");
  });

  it("with verification: accepts a commit signed by an allowed key, refuses an unsigned one and one signed by another key", async () => {
    const allowed = keyPair("allowed");
    const other = keyPair("other");
    const signers = join(dir.path, "allowed_signers");
    writeFileSync(signers, `ann@example.com ${allowed.pub}\n`);
    const work = join(dir.path, "work");
    const signed = (key: string, subject: string): string => {
      writeFileSync(join(work, "signed.txt"), subject);
      git(work, "add", "-A");
      git(work, "-c", "user.name=Ann", "-c", "user.email=ann@example.com", "-c", "gpg.format=ssh", "-c", `user.signingkey=${key}`, "commit", "-qS", "-m", subject);
      git(work, "push", "-q", "origin", "HEAD:main");
      return git(work, "rev-parse", "HEAD").trim();
    };
    const s = new GitSource(source({ allowedSignersFile: signers }), join(dir.path, "cache5"), env);
    const good = signed(allowed.key, "signed");
    expect((await s.fetch()).sha).toBe(good);
    await expect(s.verify(good)).resolves.toBeUndefined();
    const bad = signed(other.key, "other key");
    await s.fetch();
    await expect(s.verify(bad)).rejects.toThrow(`source routing: commit ${bad.slice(0, 12)} is refused: its signature is not by a key of ${signers}`);
    const unsigned = repo.commit({ "x.txt": "x" }, "unsigned");
    await s.fetch();
    await expect(s.verify(unsigned)).rejects.toThrow(`source routing: commit ${unsigned.slice(0, 12)} is refused: it is not signed`);
  });
});
