import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GitSource } from "../../src/agent/source.js";
import type { AgentSource } from "../../src/model/agent.js";
import { tempDir } from "../reliability/cli.js";
import { keyPair, makeRepo } from "./world.js";

const dir = tempDir("agent-source");
afterAll(() => dir.remove());
const env = { PATH: process.env.PATH };

function source(over: Partial<AgentSource>): AgentSource {
  return { name: "routing", url: join(dir.path, "routing.git"), ref: "main", intervalMs: 60_000, timeoutMs: 10_000, ...over };
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
    const allowed = keyPair(dir.path, "allowed");
    const other = keyPair(dir.path, "other");
    const signers = join(dir.path, "allowed_signers");
    writeFileSync(signers, `ann@example.com ${allowed.pub}\n`);
    const signed = (key: string, subject: string): string => repo.commit({ "signed.txt": subject }, subject, key);
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
