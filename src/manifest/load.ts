/**
 * Loading manifests: files and folders to the normalised DesiredState, with every problem reported as a diagnostic
 * pinned to `file:line:col`. The steps: find the files (walk.ts), read each file and parse its YAML with every
 * node's place (yaml-source.ts), replace `${var.*}` and `${EDGEPLAN_VAR_*}` (interpolate.ts), check each document against its
 * kind's schema (check-document.ts), read and check IdP metadata (idp-metadata.ts), then normalise and apply the
 * rules between objects (build-desired.ts).
 */
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { sortDiagnostics, type Diagnostic } from "../model/errors.js";
import type { DesiredState, SourcePos } from "../model/state.js";
import { LIMITS, utf8Bytes } from "../model/wire.js";
import { PROJECT_FILE } from "../model/project-schema.js";
import { clipMessage } from "../model/confine.js";
import { buildDesired, samlSourceKind, type SamlSource } from "./build-desired.js";
import type { CheckedDocument } from "./check-document.js";
import { checkManifestText, emptyCheckedTexts, type CheckedTexts } from "./check-text.js";
import type { XmlProblem } from "../kinds/saml-metadata.js";
import { checkIdpMetadataXml, readIdpMetadataFile, type IdpFileResult } from "./idp-metadata.js";
import type { Env, VarSource } from "./interpolate.js";
import { cannotRead, collectManifestFiles, displayPath, type ManifestFile } from "./walk.js";
import { decodeManifest, Pinner, sizeDiagnostic } from "./yaml-source.js";

export interface LoadOptions {
  /** Where `${EDGEPLAN_VAR_*}` values come from. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  /** Where `${var.*}` values come from: the chosen environment (see `VarSource`). Default: null, none. */
  vars?: VarSource;
  /** Base of relative paths, and of the paths shown in diagnostics. Default: `process.cwd()`. */
  cwd?: string;
  /** The time certificates are checked against. Default: now. */
  now?: Date;
}

export interface LoadResult {
  /** Only meaningful when `diagnostics` holds no error. */
  desired: DesiredState;
  /** Every problem found, errors and warnings, sorted by file, line and column. */
  diagnostics: Diagnostic[];
  /** The manifest files read (paths relative to the current directory). */
  files: string[];
  /** Absolute path of the manifest root: the folder given (or the folder of the file given); with several paths, the deepest folder holding them all. */
  root: string;
  /** Number of manifest documents read (empty documents left out). */
  objects: number;
  /** YAML files found in folders that were not read because no document in them has a `kind` (not manifests). */
  skipped: string[];
}

/**
 * True when a YAML text found in a folder is meant as manifests: some document has a top-level `kind` or `apiVersion`
 * key, or the keys of a manifest that lost its kind (`name` with `backends`, `edge` with `route`), so that a missing
 * kind is reported rather than the file skipped. Fixtures files and CI workflows match none of these.
 */
export function looksLikeManifest(text: string): boolean {
  const topLevel = (key: string): boolean => new RegExp(`^["']?${key}["']?[ \\t]*:`, "m").test(text);
  return (
    topLevel("kind") ||
    topLevel("apiVersion") ||
    /^[ \t]*\{[^\n]*["']?\bkind["']?[ \t]*:/m.test(text) ||
    (topLevel("name") && topLevel("backends")) ||
    (topLevel("edge") && topLevel("route"))
  );
}

/** Diagnostics for problems of IdP metadata: inside an XML file when they have a place there, else at the manifest value. */
function xmlDiagnostics(problems: XmlProblem[], fallback: SourcePos, xmlFile: string | undefined): Diagnostic[] {
  return problems.map((p) => ({
    severity: p.severity,
    pos: xmlFile !== undefined && p.line !== undefined ? { file: xmlFile, line: p.line, col: p.col ?? 1 } : fallback,
    message: xmlFile === undefined ? `saml.idp_metadata: ${p.message}` : p.message,
  }));
}

/** The manifest files read, those skipped, and the file each checked document came from. */
type ReadFiles = Pick<LoadResult, "files" | "skipped"> & { fileOf: Map<CheckedDocument, ManifestFile> };

/** A file read: its text, a diagnostic in its place, or "skip" (a walked YAML file that is not a manifest). */
export type FileText = { text: string } | { diagnostic: Diagnostic } | "skip";

/** Reads one file found and decodes it; a walked YAML file that is not a manifest is skipped (`fmt` reads the same way). */
export async function readManifestFile(file: ManifestFile): Promise<FileText> {
  let bytes: Uint8Array;
  try {
    // The size first: a file of gigabytes is refused unread.
    const tooLarge = sizeDiagnostic((await stat(file.path)).size, file.display);
    if (tooLarge) return { diagnostic: tooLarge };
    bytes = await readFile(file.path);
  } catch (e) {
    return { diagnostic: { severity: "error", pos: { file: file.display, line: 1, col: 1 }, message: cannotRead("file", e) } };
  }
  const decoded = decodeManifest(bytes, file.display);
  return "text" in decoded && !file.explicit && !looksLikeManifest(decoded.text) ? "skip" : decoded;
}

/**
 * Reads the files found and checks every document of the manifests into `checked`, in the order of the files. Each
 * file is read when the one before it is checked: while it is read, requests in flight beside the loading (`plan`'s
 * listing) are followed up, within one file's checks (a few ms) rather than after the whole loading.
 */
async function readAndCheckFiles(found: ManifestFile[], env: Env, vars: VarSource, checked: CheckedTexts): Promise<ReadFiles> {
  const read: ReadFiles = { files: [], skipped: [], fileOf: new Map() };
  for (const file of found) {
    const t = await readManifestFile(file);
    if (t === "skip") {
      // The project file sits beside the manifests by design: it is not a manifest that lost its kind.
      if (path.basename(file.path) !== PROJECT_FILE) read.skipped.push(file.display);
      continue;
    }
    read.files.push(file.display);
    if ("diagnostic" in t) {
      checked.diagnostics.push(t.diagnostic);
      continue;
    }
    for (const doc of checkManifestText(t.text, file.display, env, checked, vars)) read.fileOf.set(doc, file);
  }
  return read;
}

/** What checking the IdP metadata of one route gives: diagnostics, and the source as read (none when it cannot be read). */
type SamlCheck = { diagnostics: Diagnostic[]; source?: SamlSource };

/** Checks `saml.idp_metadata` written inline: not empty, within the API's size limit, valid metadata. */
function checkInlineSaml(text: string, at: SourcePos, now: Date): SamlCheck {
  const bytes = utf8Bytes(text);
  const refuse = (message: string): SamlCheck => ({ diagnostics: [{ severity: "error", pos: at, message: `saml.idp_metadata ${message}` }] });
  if (text === "") return refuse("is empty; give the IdP's EntityDescriptor XML, or use idp_metadata_file");
  if (bytes > LIMITS.idpMetadataBytes) return refuse(`is ${bytes} bytes, more than the ${LIMITS.idpMetadataBytes} bytes (128 KiB) the API accepts`);
  return { diagnostics: xmlDiagnostics(checkIdpMetadataXml(text, now), at, undefined), source: { text } };
}

/** IdP metadata files already read and checked, by manifest root and path: one file may serve several routes. */
type IdpFileCache = Map<string, Promise<{ read: IdpFileResult; problems: XmlProblem[] }>>;

/** Reads and checks `saml.idp_metadata_file` (inside the manifest root), once per file. */
async function checkSamlFile(ref: string, at: SourcePos, manifest: ManifestFile, cache: IdpFileCache, cwd: string, now: Date): Promise<SamlCheck> {
  const cacheKey = `${manifest.root}\u0000${path.resolve(path.dirname(manifest.path), ref)}\u0000${ref}`;
  const pending =
    cache.get(cacheKey) ??
    readIdpMetadataFile(ref, manifest.path, manifest.root, manifest.rootDisplay).then((read) => ({ read, problems: read.ok ? checkIdpMetadataXml(read.text, now) : [] }));
  cache.set(cacheKey, pending);
  const { read, problems } = await pending;
  if (!read.ok) {
    // A problem inside the file (its encoding) is shown there; one with the reference, at the reference.
    const pos = read.absPath !== undefined && read.line !== undefined ? { file: displayPath(cwd, read.absPath), line: read.line, col: read.col ?? 1 } : at;
    return { diagnostics: [{ severity: "error", pos, message: read.message }] };
  }
  const display = displayPath(cwd, read.absPath);
  return { diagnostics: xmlDiagnostics(problems, { file: display, line: 1, col: 1 }, display), source: { text: read.text, file: display } };
}

/** Checks the IdP metadata of every EdgeRoute document with a SAML module; returns each one's source (undefined after an error). */
async function checkSamlSources(documents: CheckedDocument[], fileOf: Map<CheckedDocument, ManifestFile>, diagnostics: Diagnostic[], cwd: string, now: Date) {
  const samlSources = new Map<CheckedDocument, SamlSource | undefined>();
  const cache: IdpFileCache = new Map();
  for (const doc of documents) {
    if (doc.kind !== "EdgeRoute") continue;
    const saml = doc.value.saml;
    if (saml === undefined || saml === "absent") continue;
    const kind = samlSourceKind(saml);
    if (kind !== "inline" && kind !== "file") continue;
    const pin = new Pinner(doc.src);
    const check =
      kind === "inline"
        ? checkInlineSaml(saml.idp_metadata ?? "", pin.value(["saml", "idp_metadata"]), now)
        : await checkSamlFile(saml.idp_metadata_file ?? "", pin.value(["saml", "idp_metadata_file"]), fileOf.get(doc) as ManifestFile, cache, cwd, now);
    diagnostics.push(...check.diagnostics);
    samlSources.set(doc, check.diagnostics.some((p) => p.severity === "error") ? undefined : check.source);
  }
  return samlSources;
}

/** The warning that no manifest was found under `paths`. */
function noManifestsWarning(paths: string[], cwd: string): Diagnostic {
  const message = `no manifests found in ${(paths.length > 0 ? paths : ["."]).join(", ")}; give the files or folders that hold the manifests`;
  return { severity: "warning", pos: { file: displayPath(cwd, path.resolve(cwd, paths[0] ?? ".")), line: 1, col: 1 }, message };
}

/**
 * Loads the manifests of `paths` (default `["."]`): files as given, folders walked recursively for *.yaml and *.yml
 * in sorted order (a YAML file in a folder whose documents have no `kind` is not a manifest and is skipped).
 * Never throws for a problem in the manifests: each one is a diagnostic, all of them reported, and `desired` is only
 * meaningful when none is an error. `idp_metadata_file` must stay inside the manifest root of the path it was found
 * under.
 */
export async function loadDesired(paths: string[] = ["."], options: LoadOptions = {}): Promise<LoadResult> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const now = options.now ?? new Date();
  const found = await collectManifestFiles(paths, cwd);
  const checked = emptyCheckedTexts();
  const { diagnostics, documents, declaredNames, references } = checked;
  diagnostics.push(...found.diagnostics);
  const { files, skipped, fileOf } = await readAndCheckFiles(found.files, options.env ?? process.env, options.vars ?? null, checked);
  const samlSources = await checkSamlSources(documents, fileOf, diagnostics, cwd, now);
  const built = buildDesired({ documents, declaredNames, references, samlSources });
  diagnostics.push(...built.diagnostics);
  if (files.length === 0 && found.diagnostics.length === 0) diagnostics.push(noManifestsWarning(paths, cwd));
  return {
    desired: built.desired,
    diagnostics: sortDiagnostics(diagnostics).map((d) => ({ ...d, message: clipMessage(d.message) })),
    files,
    root: found.root,
    objects: checked.objects,
    skipped,
  };
}
