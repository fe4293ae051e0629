/**
 * The loader's steps for one manifest text, without a disk: parse the YAML documents, interpolate `${VAR}`, check
 * each document against its kind's schema, and collect what the rules across objects need (names, references).
 */
import type { Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";
import { Pinner, checkDocument, type CheckResult, type CheckedDocument } from "./check-document.js";
import { interpolateDocument, type Env } from "./interpolate.js";
import { runSteps } from "../model/steps.js";
import { fastDocuments } from "./yaml-fast.js";
import { parseManifestText, toPlain, type ParsedDocument } from "./yaml-source.js";

/** What the documents of several manifest texts add up to before the rules across objects run. */
export interface CheckedTexts {
  diagnostics: Diagnostic[];
  /** Documents that passed their schema. */
  documents: CheckedDocument[];
  declaredNames: Array<{ name: string; pos: SourcePos }>;
  references: Array<{ key: string; pos: SourcePos }>;
  /** Documents read (empty documents left out). */
  objects: number;
}

export function emptyCheckedTexts(): CheckedTexts {
  return { diagnostics: [], documents: [], declaredNames: [], references: [], objects: 0 };
}

/** Adds one document's check to `into`; returns the document when it passed its schema. */
function addChecked(into: CheckedTexts, d: ParsedDocument, result: CheckResult): CheckedDocument | undefined {
  into.diagnostics.push(...result.diagnostics);
  const pin = new Pinner(d);
  if (result.name !== undefined) into.declaredNames.push({ name: result.name, pos: pin.value(["name"]) });
  for (const key of result.references ?? []) into.references.push({ key, pos: pin.key(["backends", key]) });
  if (result.checked) into.documents.push(result.checked);
  return result.checked;
}

/**
 * The documents of a text by the fast read (yaml-fast.ts) when it takes the text and every document passes its
 * schema with nothing to say; else undefined, and the full way reports. A text with `$` goes the full way: its
 * variables are replaced in the nodes. Yields after each document (see `checkManifestTextSteps`).
 */
function* checkFast(text: string, display: string, into: CheckedTexts): Generator<void, CheckedDocument[] | undefined> {
  const docs = text.includes("$") ? undefined : fastDocuments(text, display);
  if (docs === undefined) return undefined;
  const results: Array<{ src: ParsedDocument; result: CheckResult }> = [];
  for (const { src, value } of docs) {
    yield;
    const result = checkDocument(src, value);
    if (result.diagnostics.length > 0) return undefined;
    results.push({ src, result });
  }
  into.objects += results.length;
  return results.flatMap(({ src, result }) => addChecked(into, src, result) ?? []);
}

/**
 * Checks every document of one manifest text (shown as `display` in diagnostics), adding what it finds to `into`.
 * Returns the documents of this text that passed their schema. A generator that yields between documents, so that
 * a loader can give the event loop a turn now and then (reads beside the loading go on); `checkManifestText` runs
 * it through. `fastRead: false` reads the text the full way even when the fast way would take it.
 */
export function* checkManifestTextSteps(
  text: string,
  display: string,
  env: Env,
  into: CheckedTexts,
  fastRead = true,
): Generator<void, CheckedDocument[]> {
  const fast = fastRead ? yield* checkFast(text, display, into) : undefined;
  if (fast !== undefined) return fast;
  const parsed = parseManifestText(text, display);
  into.diagnostics.push(...parsed.diagnostics);
  const passed: CheckedDocument[] = [];
  for (const d of parsed.docs) {
    yield;
    into.objects++;
    const interpolation = interpolateDocument(d, env);
    into.diagnostics.push(...interpolation.diagnostics);
    const plain = toPlain(d);
    if ("diagnostic" in plain) {
      into.diagnostics.push(plain.diagnostic);
      continue;
    }
    const checked = addChecked(into, d, checkDocument(d, plain.value, interpolation.unresolved));
    if (checked) passed.push(checked);
  }
  return passed;
}

/** `checkManifestTextSteps` run through at once. */
export function checkManifestText(text: string, display: string, env: Env, into: CheckedTexts): CheckedDocument[] {
  return runSteps(checkManifestTextSteps(text, display, env, into));
}
