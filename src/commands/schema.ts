/**
 * `edgeplan schema [--out DIR]`: writes the JSON Schemas of `SCHEMAS` (src/model/schemas.ts), one file each.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { EXIT } from "../model/errors.js";
import { renderSchemaFiles } from "../model/schemas.js";

/** Writes every schema file into `outDir` (created if missing) and returns the paths written, in registry order. */
export async function writeSchemas(outDir: string): Promise<string[]> {
  await mkdir(outDir, { recursive: true });
  const written: string[] = [];
  for (const { file, text } of renderSchemaFiles()) {
    const target = path.join(outDir, file);
    await writeFile(target, text);
    written.push(target);
  }
  return written;
}

/** Runs `edgeplan schema`: writes the files and names each on stdout. */
export async function runSchema(outDir: string, options: { cwd?: string; stdout?: { write(s: string): unknown } } = {}): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const stdout = options.stdout ?? process.stdout;
  const written = await writeSchemas(path.resolve(cwd, outDir));
  stdout.write(written.map((p) => `wrote ${path.relative(cwd, p) || p}\n`).join(""));
  return EXIT.ok;
}
