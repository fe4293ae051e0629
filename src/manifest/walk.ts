/**
 * The manifest files named on the command line: files as given, folders walked recursively for *.yaml and *.yml in
 * sorted order. Hidden entries (`.git`, `.github`) and `node_modules` are not walked, symbolic links are followed only
 * when they stay inside the manifest root and out of `.git/`, and a file reached twice is read once.
 */
import type { Dirent, Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { type Diagnostic, fileErrorReason } from "../model/errors.js";
import { compareText } from "../model/canonical.js";
import { insideGitFolder } from "../model/confine.js";
import { PROJECT_FILE } from "../model/project-schema.js";

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

/** The deepest folder that holds both `a` and `b`. */
function commonAncestor(a: string, b: string): string {
  while (!inside(a, b) && path.dirname(a) !== a) a = path.dirname(a);
  return a;
}

/** The error of a path that a file-system call failed on: what it is, why it failed, what to do. */
export function cannotRead(what: string, err: unknown): string {
  const why = fileErrorReason(err);
  return `cannot read this ${what} (${why}); ${why === "permission denied" ? "check its permissions" : "fix the path or remove it"}`;
}

/** What finding the files of one path needs and adds to. */
interface Walk {
  cwd: string;
  root: string;
  rootDisplay: string;
  /** Real paths of the files already added, and of the folders already walked. */
  seen: Set<string>;
  files: ManifestFile[];
  problem: (p: string, message: string) => void;
}

const outsideRoot = (w: Walk, what: string): string =>
  `symbolic link leads outside the manifest root ${w.rootDisplay === "." ? "./" : `${w.rootDisplay}/`}; copy the ${what} into the root instead`;

async function addFile(w: Walk, file: string, explicit: boolean): Promise<void> {
  const real = await realpath(file);
  if (w.seen.has(real)) return;
  w.seen.add(real);
  w.files.push({ path: file, display: displayPath(w.cwd, file), root: w.root, rootDisplay: w.rootDisplay, explicit });
}

/** A file named on the command line, confined like one found by walking: a pull request may turn it into a link to the runner's secrets (a credentials file, /proc/self/environ) or to a device that never ends. */
async function addGivenFile(w: Walk, abs: string, info: Stats): Promise<void> {
  if (!inside(await realpath(w.root), await realpath(abs))) w.problem(abs, outsideRoot(w, "file"));
  else if (!info.isFile()) w.problem(abs, "not a regular file (a device, pipe or socket); name a YAML file");
  else await addFile(w, abs, true);
}

/** One entry of a folder walked: a folder to walk, a manifest file to add, or a link to follow inside the root. */
async function walkEntry(w: Walk, realRoot: string, entry: Dirent, p: string): Promise<void> {
  let isDir = entry.isDirectory();
  let isFile = entry.isFile();
  if (entry.isSymbolicLink()) {
    const real = await realpath(p);
    const target = await stat(real);
    // A link into .git/ stays in the root but never leads to a manifest, only to the checkout's credentials.
    const intoGit = insideGitFolder(path.relative(realRoot, real));
    if (!inside(realRoot, real) || intoGit) {
      const message = intoGit ? "symbolic link leads into .git/; copy the files into the root instead" : outsideRoot(w, "files");
      if (isManifestName(entry.name) || target.isDirectory()) w.problem(p, message);
      return;
    }
    isDir = target.isDirectory();
    isFile = target.isFile();
    if (isDir && w.seen.has(real)) return;
    if (isDir) w.seen.add(real);
  }
  if (isDir) await walkFolder(w, realRoot, p);
  else if (isFile && isManifestName(entry.name)) await addFile(w, p, false);
}

/** Walks a folder in sorted order; what cannot be read is a problem at its path, and the walk goes on. */
async function walkFolder(w: Walk, realRoot: string, dir: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    w.problem(dir, cannotRead("folder", e));
    return;
  }
  // A folder below the root with its own project file is another project: its manifests are read with that file
  // (its environments' `${var.*}`), by running edgeplan there, not as part of this one.
  if (dir !== w.root && entries.some((e) => e.name === PROJECT_FILE && !e.isDirectory())) return;
  for (const entry of entries.sort(byName)) {
    if (skippedDir(entry.name)) continue;
    const p = path.join(dir, entry.name);
    try {
      await walkEntry(w, realRoot, entry, p);
    } catch (e) {
      // A dangling link or a loop of links, a folder that can be listed but not entered, an entry removed while
      // walking. A link that is not named as a manifest is no manifest: it is left alone.
      const what = entry.isSymbolicLink() ? "symbolic link" : entry.isDirectory() ? "folder" : "file";
      if (isManifestName(entry.name) || entry.isDirectory()) w.problem(p, cannotRead(what, e));
    }
  }
}

/**
 * Finds the manifest files of `paths` (resolved against `cwd`). Problems (a path that does not exist, a link
 * leading out of the root, a file or folder that cannot be read) are diagnostics at the path; nothing throws for them.
 */
export async function collectManifestFiles(paths: string[], cwd: string): Promise<{ files: ManifestFile[]; diagnostics: Diagnostic[]; root: string }> {
  const files: ManifestFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Set<string>();
  const roots: string[] = [];
  const problem = (p: string, message: string): void => {
    diagnostics.push({ severity: "error", pos: { file: displayPath(cwd, p), line: 1, col: 1 }, message });
  };
  for (const given of paths.length > 0 ? paths : ["."]) {
    const abs = path.resolve(cwd, given);
    try {
      const info = await stat(abs);
      const root = info.isDirectory() ? abs : path.dirname(abs);
      roots.push(root);
      const w: Walk = { cwd, root, rootDisplay: displayPath(cwd, root), seen, files, problem };
      if (!info.isDirectory()) await addGivenFile(w, abs, info);
      else {
        const realRoot = await realpath(root);
        seen.add(realRoot);
        await walkFolder(w, realRoot, root);
      }
    } catch (e) {
      const why = fileErrorReason(e);
      problem(abs, why === "no such file" ? "no such file or folder; check the path given to edgeplan" : cannotRead("path", e));
    }
  }
  return { files, diagnostics, root: roots.length > 0 ? roots.reduce(commonAncestor) : path.resolve(cwd) };
}
