/**
 * The fast read of manifest YAML (src/manifest/yaml-fast.ts) must never read a text differently from the full
 * way: for any text it either declines, or gives the same documents (values and where each starts) as `yaml` does,
 * for a text `yaml` reads without a word to say. And `loadDesired` must give the same result, positions included,
 * with and without it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadDesired } from "../../src/manifest/load.js";
import { fastChecks } from "../../src/manifest/check-text.js";
import { FastCheckWorker as SourceFastCheckWorker } from "../../src/manifest/fast-check-worker.js";
import { readPlainDocuments } from "../../src/manifest/yaml-fast.js";
import { runSteps } from "../../src/model/steps.js";
import { parseManifestText, toPlain } from "../../src/manifest/yaml-source.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Every YAML file under a folder, recursively. */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : yamlFiles(full);
    return /\.ya?ml$/.test(e.name) ? [full] : [];
  });
}

/** "declined", or "agrees" after checking that the full way reads the text the same with nothing to say. */
function compare(text: string): "declined" | "agrees" {
  const fast = readPlainDocuments(text);
  if (fast === undefined) return "declined";
  const full = parseManifestText(text, "m.yaml");
  expect(full.diagnostics, JSON.stringify(text)).toEqual([]);
  const docs = full.docs.map((d) => {
    const plain = toPlain(d);
    if (!("value" in plain)) throw new Error(`the full way could not build ${JSON.stringify(text)}`);
    return { value: plain.value, start: d.doc.contents?.range?.[0] };
  });
  expect(fast, JSON.stringify(text)).toStrictEqual(docs);
  return "agrees";
}

/** `compare` on 1,500 generated texts; how many of them the fast way read (and agreed on). */
function agreedOn(texts: fc.Arbitrary<string>): number {
  let agreed = 0;
  fc.assert(
    fc.property(texts, (t) => {
      if (compare(t) === "agrees") agreed++;
    }),
    { numRuns: 1500 },
  );
  return agreed;
}

describe("the fast read of YAML", () => {
  it("reads every YAML file of the tests and examples as the full way does, or declines it", () => {
    const files = [...yamlFiles(path.join(root, "test")), ...yamlFiles(path.join(root, "examples"))];
    const outcomes = files.map((f) => compare(readFileSync(f, "utf8")));
    expect(files.length).toBeGreaterThan(100);
    // Most of them are plain manifests: the fast way must take those.
    expect(outcomes.filter((o) => o === "agrees").length).toBeGreaterThan(files.length * 0.8);
  });

  it("reads scalars by yaml's core schema, as the full way does", () => {
    const text = [
      "a: 1", "b: 0o17", "c: 0x1F", "d: 012", "e: +12", "f: -3.5", "g: .5", "h: 1e3", "i: .inf", "j: -.Inf", "k: .nan",
      "l: true", "m: False", "n: yes", "o: no", "p: on", "q: null", "r: ~", "s:", "t: 1_000", "u: 0b101", "v: 2026-01-01",
      "w: '1'", 'x: "true"', "y: 1.", "z: -0", "aa: 12abc", "bb: Null", "cc: TRUE", "dd: nan", "ee: 0x", "ff: 1e", "gg: +.5",
    ].join("\n");
    expect(compare(text)).toBe("agrees");
    const [doc] = readPlainDocuments(text) ?? [];
    expect(doc?.value).toMatchObject({ a: 1, b: 15, c: 31, d: 12, n: "yes", q: null, s: null, t: "1_000", u: "0b101", v: "2026-01-01", w: "1", x: "true", dd: "nan" });
  });

  it("reads quoting, escapes, block scalars, folding, comments and documents as the full way does", () => {
    const texts = [
      'a: "x\\ty\\u00e9\\n"\nb: \'it\'\'s\'\nc: "multi\n  line"\n',
      "a: |\n  one\n  two\n\nb: >\n  folded\n  text\n\n  para\nc: |-\n  stripped\nd: |+\n  kept\n\ne: >2\n    indented\n",
      "# lead\n---\nkind: A # trailing\n# between\nname: x\n...\n---\n\n---\nkind: B\n",
      "a:\n  - 1\n  - b: 2\n    c: [3, 4]\n  - {d: 5, e: six}\nf: []\ng: {}\n",
      "a: plain\n  continued\n  lines\nb: x#y\nc: 'x #y'\n",
      "\ufeffkind: WeightedBackend\r\nname: crlf\r\nbackends:\r\n  bkdhr_1: 1\r\n",
      "'quoted key': 1\n\"dq key\": 2\nkey with spaces: 3\n1: one\ntrue: yes\n0x10: sixteen\n~: null key\n",
      "emoji: 😀\nunicode: é€\nkey-😀: v\n",
      "a: 'line\n\n  folded'\n",
    ];
    for (const text of texts) expect(compare(text), JSON.stringify(text)).toBe("agrees");
  });

  it("declines what the two libraries may read apart, or what the full way has something to say about", () => {
    const declined = [
      "a: &x 1\nb: *x\n", // anchors and aliases
      "a: !!str 1\n", // tags
      "a: !custom 1\n",
      "%YAML 1.2\n---\na: 1\n", // directives
      "? complex\n: key\n", // explicit keys
      "[a, b]: c\n", // a collection as a key
      "a:\n\tb: 1\n", // tabs
      "a: 1\rb: 2\n", // a lone carriage return
      "a: [\n  1\n]\n", // a flow collection closed at the start of a line
      "a: 1\na: 2\n", // a key twice
      "1: a\n'1': b\n",
      "__proto__: x\n",
      `${"k".repeat(1100)}: v\n`, // an implicit key the full way refuses
      '"multi\n line key": v\n',
      "a: b: c\n", // syntax errors
      "a:\n  - 1\n - 2\n",
      "a: 'unterminated\n",
      `${"[".repeat(70)}${"]".repeat(70)}\n`, // nesting
    ];
    for (const text of declined) expect(readPlainDocuments(text), JSON.stringify(text)).toBeUndefined();
  });

  it("reads any generated text as the full way does, or declines it; plain documents are taken", () => {
    // Mostly ordinary words, now and then a token that means something to YAML.
    const word = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("a", "name", "kind", "backends", "x y", "é", "😀", "0", "1", "0x10", "0o7", "1.5", "1e3", ".inf", ".nan", "true", "False", "null", "~", "yes", "1_0", "-1", "+2", "a-b", "a.b", "a/b") },
      { weight: 1, arbitrary: fc.constantFrom("#", "a#b", " #", "a: b", "'", '"', "[", "]", "{", "}", ",", "&a", "*a", "!t", "%", "@", "`", "|", ">", "---", "...", "\\", "\\n", " ", "", "-", ":", "? ") },
    );
    const scalar = fc.oneof(
      fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join("")),
      fc.array(word, { maxLength: 3 }).map((w) => `'${w.join("").replaceAll("'", "''")}'`),
      fc.array(word, { maxLength: 3 }).map((w) => JSON.stringify(w.join(""))),
      fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => `|\n    ${w.join("\n    ")}`),
      fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => `>-\n    ${w.join(" ")}`),
    );
    const entry = fc.tuple(word, scalar, fc.boolean()).map(([k, v, nested]) => (nested ? `${k || "k"}:\n  - ${v.replaceAll("\n    ", "\n      ")}` : `${k}: ${v}`));
    const doc = fc.array(entry, { minLength: 1, maxLength: 6 }).map((lines) => lines.join("\n"));
    const text = fc.tuple(fc.array(doc, { minLength: 1, maxLength: 3 }), fc.constantFrom("\n", "\r\n")).map(([docs, nl]) => `${docs.join("\n---\n")}\n`.replaceAll("\n", nl));
    // About a third of them are read the fast way; every one of those must agree.
    expect(agreedOn(text)).toBeGreaterThan(300);

    // Documents of the plain subset (plain keys, plain or quoted words) are always taken.
    const plainWord = fc.stringMatching(/^[a-z][a-z0-9 ._/-]{0,20}[a-z0-9]$/);
    const plainDoc = fc.dictionary(plainWord, fc.oneof(plainWord, fc.integer(), fc.boolean()), { minKeys: 1, maxKeys: 8 }).map((o) =>
      Object.entries(o)
        .map(([k, v]) => `${k}: ${typeof v === "string" ? `'${v}'` : String(v)}`)
        .join("\n"),
    );
    fc.assert(
      fc.property(plainDoc, (t) => {
        expect(compare(`${t}\n`)).toBe("agrees");
      }),
      { numRuns: 300 },
    );
  });

  it("reads generated trees written in block and flow styles as the full way does", () => {
    const text = fc.constantFrom("plain", "a b", "é😀", "0", "-1", "1.5", "1e3", "0x1f", "0o17", "true", "FALSE", "null", "~", "yes", "", " lead", "trail ", "a: b", "a #b", "a#b", "x'y", 'x"y', "\\", "line\nbreak", "-", "- a", ":", "[a]", "{b}", ",", "@x", "`x`", "...");
    const quote = (s: string, style: number): string =>
      style === 0 ? s : style === 1 ? `'${s.replaceAll("'", "''")}'` : JSON.stringify(s);
    const key = fc.tuple(text, fc.integer({ min: 0, max: 2 })).map(([k, style]) => quote(k, style));
    const leaf = fc.tuple(text, fc.integer({ min: 0, max: 2 })).map(([v, style]) => quote(v, style));
    type Tree = string | Tree[] | Array<[string, Tree]>;
    const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.array(tie("node"), { maxLength: 3 }),
        fc.array(fc.tuple(key, tie("node")), { maxLength: 3 }).map((pairs) => pairs as Array<[string, Tree]>),
      ),
    })).node;
    const isMap = (t: Tree): t is Array<[string, Tree]> => Array.isArray(t) && t.every((x) => Array.isArray(x) && x.length === 2 && typeof x[0] === "string" && !Array.isArray(x[0]));
    const flow = (t: Tree): string =>
      typeof t === "string" ? t : isMap(t) && t.length > 0 ? `{${t.map(([k, v]) => `${k}: ${flow(v)}`).join(", ")}}` : `[${t.map((x) => flow(x as Tree)).join(", ")}]`;
    const block = (t: Tree, indent: string): string => {
      if (typeof t === "string" || t.length === 0) return ` ${flow(t)}`;
      if (isMap(t)) return t.map(([k, v]) => `\n${indent}${k}:${block(v, `${indent}  `)}`).join("");
      return t.map((x) => `\n${indent}-${block(x as Tree, `${indent}  `)}`).join("");
    };
    const doc = fc.tuple(fc.array(fc.tuple(key, tree), { minLength: 1, maxLength: 4 }), fc.boolean()).map(([pairs, inFlow]) =>
      inFlow ? `${flow(pairs as Array<[string, Tree]>)}\n` : `${block(pairs as Array<[string, Tree]>, "").slice(1)}\n`,
    );
    expect(agreedOn(doc)).toBeGreaterThan(300);
  });

  it("finds positions in any document of a fast-read file as the full way does: after ---, after ..., in a bare document", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "edgeplan-fast-"));
    try {
      const wb = (name: string, child: string, extra = ""): string =>
        `kind: WeightedBackend\nname: ${name}\n${extra}backends:\n  ${child}: 1\n`;
      writeFileSync(
        path.join(dir, "a.yaml"),
        [
          `# leading comment\n${wb("one", "bkdhr_3MZlOuvvtIfXBdcJi6SCPj4oIE1")}`,
          `---\n${wb("two", "missing-name", "description: 'quoted'\n")}`,
          `--- # a comment on the marker\n${wb("one", "bkdhr_3MZlOuvvtIfXBdcJi6SCPj4oIE2")}...\n# between\n${wb("three", "two")}`,
          `---\n\n  # indented comment\n${wb("four", "bkdhr_3MZlOuvvtIfXBdcJi6SCPj4oIE3", "metadata: {a: 1, b: [x, y]}\n")}`,
        ].join(""),
      );
      writeFileSync(path.join(dir, "b.yaml"), `${wb("five", "bkdhr_3MZlOuvvtIfXBdcJi6SCPj4oIE4")}---\n${wb("two", "bkdhr_3MZlOuvvtIfXBdcJi6SCPj4oIE5")}`);
      // Both files are read the fast way: every document passes its schema.
      for (const f of ["a.yaml", "b.yaml"]) expect(readPlainDocuments(readFileSync(path.join(dir, f), "utf8"))).toHaveLength(f === "a.yaml" ? 5 : 2);
      const fast = await loadDesired(["."], { cwd: dir, env: {} });
      const full = await loadDesired(["."], { cwd: dir, env: {}, fastRead: false });
      // Duplicate names and an unknown name: diagnostics of the rules across documents, at places inside them.
      expect(fast.diagnostics.map((d) => `${d.pos.file}:${d.pos.line}:${d.pos.col}`)).toEqual(["a.yaml:11:3", "a.yaml:14:7", "b.yaml:7:7"]);
      expect(JSON.parse(JSON.stringify(fast))).toEqual(JSON.parse(JSON.stringify(full)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("checks texts in a worker thread as on the main thread, and loads a large fleet the same through it", async () => {
    // The worker runs built code (dist/, built before the tests), as it does in the CLI.
    const built = path.join(root, "dist/src/manifest");
    const { FastCheckWorker } = (await import(path.join(built, "fast-check-worker.js"))) as typeof import("../../src/manifest/fast-check-worker.js");
    const builtLoad = (await import(path.join(built, "load.js"))) as typeof import("../../src/manifest/load.js");
    const files = yamlFiles(path.join(root, "test/manifest/corpus")).slice(0, 40);
    const worker = new FastCheckWorker();
    try {
      files.forEach((f, i) => worker.send(i, readFileSync(f, "utf8"), f));
      for (const [i, f] of files.entries()) {
        expect(await worker.checks(i), f).toEqual(runSteps(fastChecks(readFileSync(f, "utf8"), f)));
      }
    } finally {
      await worker.close();
    }

    const dir = mkdtempSync(path.join(tmpdir(), "edgeplan-worker-"));
    try {
      const id = (n: number): string => `bkdhr_3MZlOuvvtIfXBdcJi6SCP${String(n).padStart(6, "0")}`;
      for (let f = 0; f < 14; f++) {
        const docs = Array.from({ length: 100 }, (_, k) => {
          const n = f * 100 + k;
          return `kind: WeightedBackend\nname: svc-${n}\ndescription: "Service ${n}"\nmetadata:\n  team: team-${n % 7}\n  tier: "${n % 3}"\nbackends:\n  ${id(n)}: 9000\n  ${id(n + 1)}: 1000\n${n % 50 === 1 ? "  svc-0: 5\n" : ""}`;
        });
        writeFileSync(path.join(dir, `b-${f}.yaml`), docs.join("---\n"));
      }
      // One name twice, to hold a diagnostic from the rules across documents to its place.
      writeFileSync(path.join(dir, "z.yaml"), "kind: WeightedBackend\nname: svc-5\nbackends:\n  svc-0: 1\n");
      const total = readdirSync(dir).reduce((n, f) => n + readFileSync(path.join(dir, f), "utf8").length, 0);
      expect(total).toBeGreaterThan(builtLoad.WORKER_MIN_CHARS);
      const viaWorker = await builtLoad.loadDesired(["."], { cwd: dir, env: {}, worker: new FastCheckWorker() });
      const full = await builtLoad.loadDesired(["."], { cwd: dir, env: {}, fastRead: false });
      expect(viaWorker.objects).toBe(1401);
      expect(viaWorker.diagnostics.map((d) => `${d.pos.file}:${d.pos.line}:${d.pos.col}`)).toEqual(["z.yaml:2:7"]);
      expect(JSON.parse(JSON.stringify(viaWorker))).toEqual(JSON.parse(JSON.stringify(full)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("checks every text on the main thread when the worker cannot run", async () => {
    // From the sources there is no fast-worker.js beside the module: the worker fails to start.
    const worker = new SourceFastCheckWorker();
    worker.send(0, "kind: WeightedBackend\n", "a.yaml");
    expect(await worker.checks(0)).toBeUndefined();
    const dir = path.join(root, "examples/canary");
    const withFailed = await loadDesired(["."], { cwd: dir, env: {}, worker: new SourceFastCheckWorker() });
    const without = await loadDesired(["."], { cwd: dir, env: {} });
    expect(JSON.parse(JSON.stringify(withFailed))).toEqual(JSON.parse(JSON.stringify(without)));
    await worker.close();
  });

  it("gives loadDesired the same result, every position included, on every manifest folder of the tests and examples", async () => {
    const corpus = path.join(root, "test/manifest/corpus");
    const scenarios = path.join(root, "test/scenarios");
    const folders = [
      ...readdirSync(corpus).map((n) => path.join(corpus, n)),
      ...readdirSync(scenarios).map((n) => path.join(scenarios, n, "manifests")),
      ...readdirSync(path.join(root, "examples"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => path.join(root, "examples", e.name)),
    ].filter((f) => existsSync(f));
    expect(folders.length).toBeGreaterThan(100);
    const now = new Date("2026-01-01T00:00:00Z");
    for (const dir of folders) {
      const envFile = path.join(dir, "env.json");
      const env = existsSync(envFile) ? (JSON.parse(readFileSync(envFile, "utf8")) as Record<string, string>) : {};
      const fast = await loadDesired(["."], { cwd: dir, env, now });
      const full = await loadDesired(["."], { cwd: dir, env, now, fastRead: false });
      // Through JSON, so that positions found on first read are compared by their values.
      expect(JSON.parse(JSON.stringify(fast)), dir).toEqual(JSON.parse(JSON.stringify(full)));
    }
  });
});
