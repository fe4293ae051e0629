/**
 * Manifest documents to YAML text that the manifest loader reads back to exactly the same values: `${` escaped
 * (the loader would take it for a variable), maps of user data sorted, no line folding, and every document read back
 * through the loader's own parsing steps before it is written. Pure.
 */
import { Document, isMap, isSeq, type Node } from "yaml";
import { interpolateDocument } from "../manifest/interpolate.js";
import { parseManifestText, toPlain } from "../manifest/yaml-source.js";
import { canonicalJson, compareText, isJsonObject } from "../model/canonical.js";
import { ManifestDocumentSchema } from "../model/manifest-schema.js";
import type { JsonValue } from "../model/plan.js";
import { EXPORT_HEADER } from "./types.js";

/** One manifest document to write: its plain value, the comment lines above it, and the keys whose maps are sorted. */
export interface ManifestDoc {
  value: Record<string, JsonValue>;
  /** Lines written as `# ...` above the document. */
  comment?: string[];
  /** Top-level keys whose mappings (at every depth) are written with sorted keys: user data, not a field order. */
  sortedKeys?: string[];
}

/**
 * Escapes `${` as `$${` in every string value (keys are never interpolated), so that the loader's `${VAR}`
 * substitution gives back the text as held.
 */
export function escapeInterpolation(value: JsonValue): JsonValue {
  // A function replacement: in a replacement string, "$$" would stand for one "$".
  if (typeof value === "string") return value.replaceAll("${", () => "$${");
  if (Array.isArray(value)) return value.map(escapeInterpolation);
  if (isJsonObject(value)) {
    // fromEntries defines properties, so a user key such as "__proto__" stays data.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeInterpolation(v)]));
  }
  return value;
}

function sortMaps(node: unknown): void {
  if (isMap(node)) {
    node.items.sort((a, b) => {
      const ka = String((a.key as { value?: unknown } | null)?.value ?? a.key);
      const kb = String((b.key as { value?: unknown } | null)?.value ?? b.key);
      return compareText(ka, kb);
    });
    for (const pair of node.items) sortMaps(pair.value);
  } else if (isSeq(node)) {
    for (const item of node.items) sortMaps(item);
  }
}

/** The YAML text of one document (escaped), without comments. */
function renderBody(doc: ManifestDoc): string {
  const yaml = new Document(escapeInterpolation(doc.value));
  if (isMap(yaml.contents)) {
    for (const pair of yaml.contents.items) {
      const key = String((pair.key as { value?: unknown } | null)?.value ?? pair.key);
      if (doc.sortedKeys?.includes(key)) sortMaps(pair.value as Node);
    }
  }
  return yaml.toString({ lineWidth: 0, minContentWidth: 0 });
}

/**
 * Why the text would not load back as `expected` through the loader's steps (YAML parse with its guards, `${VAR}`
 * substitution with an empty environment, plain value, manifest schema), or undefined when it does.
 */
export function checkReadBack(text: string, expected: Record<string, JsonValue>): string | undefined {
  const parsed = parseManifestText(text, "export");
  const first = parsed.diagnostics[0];
  if (first) return first.message;
  const [doc, extra] = parsed.docs;
  if (doc === undefined || extra !== undefined) return "the YAML does not hold exactly one document";
  const interpolation = interpolateDocument(doc, {});
  const problem = interpolation.diagnostics[0];
  if (problem) return problem.message;
  const plain = toPlain(doc);
  if ("diagnostic" in plain) return plain.diagnostic.message;
  // Canonical JSON rather than a deep-equal library: user keys such as "valueOf" must compare as data.
  if (canonicalJson(plain.value) !== canonicalJson(expected)) return "the YAML does not read back to the values held";
  const schema = ManifestDocumentSchema.safeParse(plain.value);
  if (!schema.success) {
    const issue = schema.error.issues[0];
    return `${issue?.path.join(".") || "(document)"}: ${issue?.message ?? "does not match the manifest schema"}`;
  }
  return undefined;
}

/**
 * The text of one document, or why it cannot be written: the rendered YAML must load back to `doc.value` exactly.
 */
export function renderDocument(doc: ManifestDoc): { text: string } | { problem: string } {
  const body = renderBody(doc);
  const problem = checkReadBack(body, doc.value);
  if (problem !== undefined) return { problem };
  const comment = (doc.comment ?? []).map((line) => (line === "" ? "#\n" : `# ${line}\n`)).join("");
  return { text: comment + body };
}

/**
 * A manifest file: the `yaml-language-server` line naming its schema, the line that marks it as written by export
 * (`EXPORT_HEADER`), then the documents separated by `---`. `bodies` are texts from `renderDocument`.
 */
export function renderManifestFile(schemaRef: string, bodies: string[]): string {
  return `# yaml-language-server: $schema=${schemaRef}\n${EXPORT_HEADER}\n${bodies.join("---\n")}`;
}
