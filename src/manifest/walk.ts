/**
 * The manifest files named on the command line: files as given, folders walked recursively for *.yaml and *.yml in
 * sorted order. Hidden entries (`.git`, `.github`) and `node_modules` are not walked, symbolic links are followed only
 * when they stay inside the manifest root and out of `.git/`, and a file reached twice is read once.
 */
import type { Dirent, Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic } from "../model/errors.js";
import { compareText } from "../model/canonical.js";
import { insideGitFolder } from "../model/confine.js";

export interface ManifestFile {
  /** Absolute path. */
  path: string;
  /** Path shown in messages: relative to the current directory. */
  display: string;
  /** The manifest root this file was found under: the folder given, or the folder of the file given. */
  root: string;
  /** The root as shown in messages. */
  rootDisplay: string;
  /** True when the file was named itself (not found by walking a folder). */
  explicit: boolean;
}

/** Relative to `cwd` with `/` separators; `.` for `cwd` itself. */
export function displayPath(cwd: string, p: string): string {
  const rel = path.relative(cwd, p);
  return (rel === "" ? "." : rel).split(path.sep).join("/");
}

const isManifestName = (name: string): boolean => /\.ya?ml$/i.test(name);
const skippedDir = (name: string): boolean => name.startsWith(".") || name === "node_modules";
const byName = (a: Dirent, b: Dirent): number => compareText(a.name, b.name);

/** Whether `p` is `base` or lies under it. */
export function inside(base: string, p: string): boolean {
  const rel = path.relative(base, p);
  return !(rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

/** The deepest folder that holds every one of `dirs`. */
export function commonAncestor(dirs: string[]): string {
  if (dirs.length === 0) return path.sep;
  let common = dirs[0] as string;
  for (const d of dirs.slice(1)) {
    while (!inside(common, d)) {
      const up = path.dirname(common);
      if (up === common) return common;
      common = up;
    }
  }
  return common;
}

/**
 * Finds the manifest files of `paths` (resolved against `cwd`). Problems (a path that does not exist, a link
 * leading out of the root, a folder that cannot be read) are diagnostics; nothing throws for them.
 */
export async function collectManifestFiles(paths: string[], cwd: string): Promise<{ files: ManifestFile[]; diagnostics: Diagnostic[]; root: string; roots: string[] }> {
  const files: ManifestFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Set<string>();
  const roots: string[] = [];
  const problem = (p: string, message: string): void => {
    diagnostics.push({ severity: "error", pos: { file: displayPath(cwd, p), line: 1, col: 1 }, message });
  };

  for (const given of paths.length > 0 ? paths : ["."]) {
    const abs = path.resolve(cwd, given);
    let info: Stats;
    try {
      info = await stat(abs);
    } catch {
      problem(abs, "no such file or folder; check the path given to edgeplan");
      continue;
    }
    const root = info.isDirectory() ? abs : path.dirname(abs);
    roots.push(root);
    const rootDisplay = displayPath(cwd, root);
    const add = async (file: string, explicit: boolean): Promise<void> => {
      const real = await realpath(file);
      if (seen.has(real)) return;
      seen.add(real);
      files.push({ path: file, display: displayPath(cwd, file), root, rootDisplay, explicit });
    };
    if (!info.isDirectory()) {
      // A file named on the command line is confined like one found by walking: a pull request may turn it into a
      // link to the runner's secrets (a credentials file, /proc/self/environ) or to a device that never ends.
      if (!inside(await realpath(root), await realpath(abs))) {
        problem(abs, `symbolic link leads outside the manifest root ${rootDisplay === "." ? "./" : `${rootDisplay}/`}; copy the file into the root instead`);
        continue;
      }
      if (!info.isFile()) {
        problem(abs, "not a regular file (a device, pipe or socket); name a YAML file");
        continue;
      }
      await add(abs, true);
      continue;
    }
    const realRoot = await realpath(root);
    const visited = new Set<string>([realRoot]);
    const walk = async (dir: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        problem(dir, `cannot read this folder (${(e as NodeJS.ErrnoException).code ?? "error"}); check its permissions`);
        return;
      }
      for (const entry of entries.sort(byName)) {
        if (skippedDir(entry.name)) continue;
        const p = path.join(dir, entry.name);
        let isDir = entry.isDirectory();
        let isFile = entry.isFile();
        if (entry.isSymbolicLink()) {
          let real: string;
          try {
            real = await realpath(p);
          } catch {
            if (isManifestName(entry.name)) problem(p, "symbolic link to nothing (its target does not exist); fix or remove it");
            continue;
          }
          // A link into .git/ stays in the root but never leads to a manifest, only to the checkout's credentials.
          const intoGit = insideGitFolder(path.relative(realRoot, real));
          if (!inside(realRoot, real) || intoGit) {
            if (isManifestName(entry.name) || (await stat(real)).isDirectory()) {
              const where = intoGit ? "into .git/" : `outside the manifest root ${rootDisplay === "." ? "./" : `${rootDisplay}/`}`;
              problem(p, `symbolic link leads ${where}; copy the files into the root instead`);
            }
            continue;
          }
          const target = await stat(real);
          isDir = target.isDirectory();
          isFile = target.isFile();
          if (isDir) {
            if (visited.has(real)) continue;
            visited.add(real);
          }
        }
        if (isDir) await walk(p);
        else if (isFile && isManifestName(entry.name)) await add(p, false);
      }
    };
    await walk(root);
  }
  return { files, diagnostics, root: roots.length > 0 ? commonAncestor(roots) : path.resolve(cwd), roots };
}
