/**
 * Which files of an existing folder an export may overwrite: files it wrote before, and none of a person's.
 * A manifest is the export's when one of its first comment lines is `EXPORT_HEADER`; another file (IdP metadata, a
 * JSON Schema), which cannot carry that line as its bytes are given, is the export's when a manifest of the export
 * in the folder refers to it (`idp_metadata_file`, `$schema`). A file that already holds exactly what would be
 * written is never in the way. Pure.
 */
import { EXPORT_HEADER, type ExportFile } from "./types.js";

/** What the folder holds at a path the export would write: nothing, a file's text, or something that is not a file. */
export type Existing = { kind: "none" } | { kind: "file"; text: string } | { kind: "other" };

const isManifestPath = (p: string): boolean => /\.ya?ml$/i.test(p);

/** Whether the text's leading comment lines include the export's header. */
export function carriesExportHeader(text: string): boolean {
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith("#")) return false;
    if (line === EXPORT_HEADER) return true;
  }
  return false;
}

/** `to` relative to the folder of `from` (both `/`-separated, relative to the out dir). */
function relativeRef(from: string, to: string): string {
  const fromParts = from.split("/").slice(0, -1);
  const toParts = to.split("/");
  let common = 0;
  while (common < fromParts.length && common < toParts.length - 1 && fromParts[common] === toParts[common]) common++;
  return [...fromParts.slice(common).map(() => ".."), ...toParts.slice(common)].join("/");
}

/**
 * The paths of `files` that exist in the folder and are not the export's (see above), sorted: what an export
 * refuses to overwrite without `--force`. `existing` says what the folder holds at each path.
 */
export function buildForeignFiles(files: readonly ExportFile[], existing: ReadonlyMap<string, Existing>): string[] {
  const at = (p: string): Existing => existing.get(p) ?? { kind: "none" };
  const ownManifests = files.flatMap((f) => {
    const found = at(f.path);
    return isManifestPath(f.path) && found.kind === "file" && carriesExportHeader(found.text) ? [{ path: f.path, text: found.text }] : [];
  });
  const referred = (p: string): boolean => ownManifests.some((m) => m.text.includes(relativeRef(m.path, p)));
  const foreign = files.filter((f) => {
    const found = at(f.path);
    if (found.kind === "none") return false;
    if (found.kind === "other") return true;
    if (found.text === f.text) return false;
    return isManifestPath(f.path) ? !carriesExportHeader(found.text) : !referred(f.path);
  });
  return foreign.map((f) => f.path).sort();
}
