/**
 * The pure core imports no I/O: `model/`, `kinds/`, `core/` and `render/` import nothing from `node:*`, no library that
 * reaches the network, the disk or the terminal, and none of the folders that do I/O. A renderer that did would not
 * be deterministic (same plan, same bytes) nor testable with plain data.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "src");
const PURE = ["model", "kinds", "core", "render"];
const IMPURE_FOLDERS = ["api", "apply", "commands", "server", "manifest", "project", "action", "export"];

/** Every module a file imports (static `import ... from`, `export ... from`, and dynamic `import()`). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const statics = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gm), ...text.matchAll(/^import\s+"([^"]+)"/gm)];
  const dynamics = [...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)];
  return [...statics, ...dynamics].map((m) => m[1] as string);
}

describe("the pure core", () => {
  for (const folder of PURE) {
    it(`src/${folder}/ imports no I/O`, () => {
      const files = readdirSync(path.join(SRC, folder)).filter((f) => f.endsWith(".ts"));
      expect(files.length).toBeGreaterThan(0);
      const bad: string[] = [];
      for (const f of files) {
        for (const spec of importsOf(path.join(SRC, folder, f))) {
          const external = !spec.startsWith(".");
          // @noble/hashes: sha256 in plain JavaScript (the digest of a rollout's target); @marcbachmann/cel-js: CEL
          // expressions; re2js: their matches(); fast-xml-parser: IdP metadata XML. None does I/O of its own.
          const allowedExternal = [
            "zod",
            "fast-deep-equal",
            "yaml",
            "@noble/hashes/sha2.js",
            "@noble/hashes/utils.js",
            "@marcbachmann/cel-js",
            "re2js",
            "fast-xml-parser",
          ].includes(spec);
          const target = spec.startsWith(".") ? path.relative(SRC, path.resolve(SRC, folder, spec)).split(path.sep)[0] : "";
          if ((external && !allowedExternal) || IMPURE_FOLDERS.includes(target ?? "")) bad.push(`${folder}/${f}: ${spec}`);
        }
      }
      expect(bad).toEqual([]);
    });
  }
});
