/**
 * The loader's steps for one manifest text, without a disk: parse the YAML documents, replace variables, check
 * each document against its kind's schema, and collect what the rules across objects need (names, references).
 * Pure.
 */
import type { Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";
import { isJsonObject } from "../model/canonical.js";
import { checkDocument, type CheckedDocument } from "./check-document.js";
import { interpolateDocument, type Env, type VarSource } from "./interpolate.js";
import { parseManifestText, Pinner, toPlain } from "./yaml-source.js";

/** What the documents of several manifest texts add up to before the rules across objects run. */
export interface CheckedTexts {
  diagnostics: Diagnostic[];
  /** Documents that passed their schema (or what is left of them: `partial`), in load order. */
  documents: CheckedDocument[];
  /** Every WeightedBackend name written, valid document or not, so that references to a broken one still resolve. */
  declaredNames: Array<{ name: string; pos: SourcePos }>;
  /** Every child key that names a WeightedBackend, from every WeightedBackend document, valid or not. */
  references: Array<{ key: string; pos: SourcePos }>;
  /** Documents read (empty documents left out). */
  objects: number;
}

export function emptyCheckedTexts(): CheckedTexts {
  return { diagnostics: [], documents: [], declaredNames: [], references: [], objects: 0 };
}

/**
 * Checks every document of one manifest text (shown as `display` in diagnostics), adding what it finds to `into`.
 * Returns the documents of this text that passed their schema. Never throws for a problem in the text.
 */
export function checkManifestText(text: string, display: string, env: Env, into: CheckedTexts, vars: VarSource = null): CheckedDocument[] {
  const parsed = parseManifestText(text, display);
  into.diagnostics.push(...parsed.diagnostics);
  const before = into.documents.length;
  for (const d of parsed.docs) {
    into.objects++;
    const interpolation = interpolateDocument(d, env, vars);
    const plain = toPlain(d);
    // Only a mapping with a kind is a manifest: the values of another document (a key file named by mistake) are not quoted.
    if ("value" in plain && isJsonObject(plain.value) && "kind" in plain.value) into.diagnostics.push(...interpolation.diagnostics);
    if ("diagnostic" in plain) {
      into.diagnostics.push(plain.diagnostic);
      continue;
    }
    const result = checkDocument(d, plain.value, interpolation.unresolved);
    const pin = new Pinner(d);
    into.diagnostics.push(...result.diagnostics);
    if (result.name !== undefined) into.declaredNames.push({ name: result.name, pos: pin.value(["name"]) });
    for (const key of result.references ?? []) into.references.push({ key, pos: pin.key(["backends", key]) });
    if (result.checked) into.documents.push(result.checked);
  }
  return into.documents.slice(before);
}
