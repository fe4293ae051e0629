/** Temporary project folders for the project file's tests: each call a new folder holding the given files. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** A maker of folders below one temporary folder (removed after the file's tests), each with `files` (name: text). */
export function projectFolders(prefix: string): (files: Record<string, string>) => string {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  return (files) => {
    const dir = mkdtempSync(join(tmp, "p-"));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, ".."), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  };
}
