/**
 * The canonical layout of manifest files (`edgeplan fmt`), through the `yaml` package's Document API so that
 * comments stay with the nodes they describe: 2-space indentation, block style, documents separated by `---`,
 * each kind's keys in the order its schema lists them (src/model/field-order.ts; unknown keys after them, as
 * written), strings quoted only where a plain scalar would read as something else, no line folding. A text is
 * parsed by the one YAML reader (yaml-source.ts) with its guards; a text with errors is not formatted. The result is
 * read back and must give the same values, document by document, or it is refused. Pure.
 */
import { isMap, isScalar, Scalar, visit, type Document, type Node, type Pair, type YAMLMap } from "yaml";
import { canonicalJson } from "../model/canonical.js";
import type { Diagnostic } from "../model/errors.js";
import { MANIFEST_FIELD_ORDER, type FieldOrder } from "../model/field-order.js";
import { MANIFEST_KINDS, type ManifestKind } from "../model/manifest-schema.js";
import { parseManifestText, toPlain, type ParsedDocument } from "./yaml-source.js";

/** The formatted text, or the diagnostics that kept the text from being formatted. */
export type FormatResult = { text: string } | { diagnostics: Diagnostic[] };

const keyName = (pair: Pair): string | undefined => (isScalar(pair.key) ? String(pair.key.value) : undefined);

/** Sorts the map's pairs into `order` (keys it does not list last, as written), and its nested field maps too. */
function orderFields(map: YAMLMap, order: FieldOrder): void {
  const rank = (pair: Pair): number => {
    const i = order.keys.indexOf(keyName(pair) ?? "");
    return i < 0 ? order.keys.length : i;
  };
  // Array.prototype.sort is stable: keys of the same rank (unknown ones) keep their order.
  map.items.sort((a, b) => rank(a) - rank(b));
  for (const pair of map.items) {
    const nested = order.nested.get(keyName(pair) ?? "");
    if (nested && isMap(pair.value)) orderFields(pair.value, nested);
  }
}

/** Block style everywhere, and strings plain unless they cannot be (block scalars stay as written). */
function restyle(doc: Document): void {
  visit(doc, {
    Collection: (_, node) => {
      node.flow = false;
    },
    Scalar: (_, node) => {
      if (typeof node.value === "string" && (node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE)) node.type = Scalar.PLAIN;
    },
  });
}

/** One document in the canonical layout, without a `---` line. */
function formatDocument(doc: Document): string {
  const contents = doc.contents as Node | null;
  const kind = isMap(contents) ? contents.get("kind") : undefined;
  if (isMap(contents) && (MANIFEST_KINDS as readonly unknown[]).includes(kind)) {
    // The comment above a document's first key is the document's header: it stays on top, whatever key comes first.
    const first = contents.items[0]?.key as Node | undefined;
    if (first?.commentBefore) {
      contents.commentBefore = [contents.commentBefore, first.commentBefore].filter(Boolean).join("\n");
      first.commentBefore = undefined;
    }
    orderFields(contents, MANIFEST_FIELD_ORDER[kind as ManifestKind]);
  }
  restyle(doc);
  if (doc.directives) doc.directives.docEnd = false;
  const blank = doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null);
  const text = blank
    ? commentsOnly(doc)
    : doc.toString({ directives: false, indent: 2, indentSeq: true, lineWidth: 0, minContentWidth: 0, defaultStringType: "PLAIN", defaultKeyType: "PLAIN" });
  return text === "" || text.endsWith("\n") ? text : `${text}\n`;
}

/** A document of comments only: its comments, without the `null` the library would write for it. */
function commentsOnly(doc: Document): string {
  const contents = doc.contents as Node | null;
  const comments = [doc.commentBefore, contents?.commentBefore, contents?.comment, doc.comment].filter((c): c is string => typeof c === "string" && c !== "");
  return comments.map((c) => `#${c.split("\n").join("\n#")}`).join("\n");
}

/** The values of the documents as canonical JSON, or undefined when one cannot be built. */
function valuesOf(docs: ParsedDocument[]): string[] | undefined {
  const out: string[] = [];
  for (const d of docs) {
    const plain = toPlain(d);
    if ("diagnostic" in plain) return undefined;
    out.push(canonicalJson(plain.value ?? null));
  }
  return out;
}

/**
 * The text of a manifest file in the canonical layout. Diagnostics instead when the YAML has errors (the file is
 * then left as it is), or, as a guard, when the formatted text would not read back to the same values.
 */
export function formatManifestText(text: string, file: string): FormatResult {
  const parsed = parseManifestText(text, file, true);
  const errors = parsed.diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) return { diagnostics: errors };
  const refuse = (message: string): FormatResult => ({ diagnostics: [{ severity: "error", pos: { file, line: 1, col: 1 }, message }] });
  const before = valuesOf(parsed.docs);
  if (before === undefined) return refuse("the documents' values cannot be built (aliases); fix the file, then run fmt again");
  const formatted = parsed.docs.map((d) => formatDocument(d.doc)).join("---\n");
  const again = parseManifestText(formatted, file, true);
  const after = again.diagnostics.some((d) => d.severity === "error") ? undefined : valuesOf(again.docs);
  if (after === undefined || after.length !== before.length || after.some((v, i) => v !== before[i])) {
    return refuse("fmt: the formatted text would not read back to the same values, so the file is left as it is; format it by hand");
  }
  return { text: formatted };
}
