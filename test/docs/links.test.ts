/**
 * Every relative link of the user and contributor documentation leads somewhere: the file or folder exists, and a
 * `#fragment` names a heading of the target (by GitHub's rule for heading anchors) or an explicit anchor in it.
 * docs/architecture.md stays short enough to read and names only files that exist; the promises table of
 * docs/reliability.md names only tests that exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/server.js";

const DOCS = [
  "README.md",
  "CONTRIBUTING.md",
  "examples/README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced blocks and inline code, where a `[text](target)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, each space a hyphen; repeats get -1, -2, ... */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  for (const [, heading] of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of markdown.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

/** The broken relative links of one file (its text: `markdown`), as `file: target (why)`. */
function brokenLinks(file: string, markdown = readFileSync(join(REPO_ROOT, file), "utf8")): string[] {
  const broken: string[] = [];
  for (const [, target] of prose(markdown).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue;
    const [path, fragment] = target!.split("#", 2) as [string, string | undefined];
    const resolved = path === "" ? join(REPO_ROOT, file) : join(REPO_ROOT, dirname(file), decodeURIComponent(path));
    if (!existsSync(resolved)) {
      broken.push(`${file}: ${target} (no such file: ${relative(REPO_ROOT, resolved)})`);
    } else if (fragment !== undefined && !(statSync(resolved).isFile() && headingAnchors(readFileSync(resolved, "utf8")).has(fragment))) {
      broken.push(`${file}: ${target} (no heading or anchor "${fragment}" in ${relative(REPO_ROOT, resolved)})`);
    }
  }
  return broken;
}

describe("links in the documentation", () => {
  it("covers the README, CONTRIBUTING.md, examples/README.md and docs/", () => {
    expect(DOCS).toEqual(expect.arrayContaining(["README.md", "docs/cli.md", "docs/server.md", "docs/performance.md", "docs/github-action.md"]));
  });

  it.each(DOCS)("every relative link of %s leads to an existing file and anchor", (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it("reads anchors as GitHub makes them", () => {
    const anchors = headingAnchors("# The API server: `edgeplan serve`\n## Trying manifests on your machine: `--local`\n## Fixtures\n## Fixtures\n");
    expect([...anchors]).toEqual(["the-api-server-edgeplan-serve", "trying-manifests-on-your-machine---local", "fixtures", "fixtures-1"]);
  });

  it("names a missing file and a missing anchor, and leaves code and web addresses alone", () => {
    const text = "[a](docs/nope.md) [b](docs/cli.md#nope) [c](docs/cli.md#commands) [d](https://x.test/y) `[e](f.md)` [g](#concepts)";
    expect(brokenLinks("README.md", text)).toEqual([
      "README.md: docs/nope.md (no such file: docs/nope.md)",
      'README.md: docs/cli.md#nope (no heading or anchor "nope" in docs/cli.md)',
    ]);
  });
});

/** The rows of the promises table of docs/reliability.md: each row's promise and the cell naming its tests. */
function promiseRows(markdown: string): { promise: string; heldBy: string }[] {
  const section = markdown.split(/^## Promises and the tests that hold them$/m)[1]?.split(/^## /m)[0] ?? "";
  return [...section.matchAll(/^\| (.+?) \| (.+?) \| [^|]+ \|$/gm)]
    .map(([, promise, heldBy]) => ({ promise: promise!, heldBy: heldBy! }))
    .filter((row) => row.promise !== "promise" && !row.promise.startsWith("---"));
}

/** What a row's tests cell gets wrong: a path that does not exist, a quoted test name its file does not hold. */
function missingTests(heldBy: string): string[] {
  const named = [...heldBy.matchAll(/`(test\/[^`]+)`(?: "([^"]+)")?/g)];
  if (named.length === 0) return [`no test named in: ${heldBy}`];
  return named.flatMap(([, path, name]) => {
    const file = join(REPO_ROOT, path!);
    if (!existsSync(file)) return [`${path}: no such file`];
    return name === undefined || readFileSync(file, "utf8").includes(name) ? [] : [`${path}: no test "${name}"`];
  });
}

describe("the maintainer's documents", () => {
  const architecture = readFileSync(join(REPO_ROOT, "docs/architecture.md"), "utf8");

  it("docs/architecture.md is at most 15 KB", () => {
    expect(Buffer.byteLength(architecture)).toBeLessThanOrEqual(15 * 1024);
  });

  it("every file docs/architecture.md names exists", () => {
    const named = [...architecture.matchAll(/`((?:src|scripts|schemas|test)\/[^`\s]*)`/g)].map(([, path]) => path!);
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((path) => !existsSync(join(REPO_ROOT, path)))).toEqual([]);
  });

  it("docs/reliability.md opens with its promises, each held by tests that exist", () => {
    const reliability = readFileSync(join(REPO_ROOT, "docs/reliability.md"), "utf8");
    expect(reliability.indexOf("## Promises and the tests that hold them")).toBeLessThan(reliability.indexOf("## 1. "));
    const rows = promiseRows(reliability);
    expect(rows.length).toBeGreaterThan(40);
    expect(rows.flatMap((row) => missingTests(row.heldBy))).toEqual([]);
  });

  it("names a test file or test name that does not exist", () => {
    expect(missingTests('`test/docs/links.test.ts` "reads anchors as GitHub makes them"')).toEqual([]);
    expect(missingTests('`test/docs/nope.test.ts`, `test/helpers/server.ts` "no such test"')).toEqual([
      "test/docs/nope.test.ts: no such file",
      'test/helpers/server.ts: no test "no such test"',
    ]);
    expect(missingTests("the whole suite")).toEqual(["no test named in: the whole suite"]);
  });
});
