/**
 * The loader's steps for one manifest text, without a disk: parse the YAML documents, interpolate `${VAR}`, check
 * each document against its kind's schema, and collect what the rules across objects need (names, references).
 */
import type { Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";
import { Pinner, checkDocument, type CheckResult, type CheckedDocument } from "./check-document.js";
import { interpolateDocument, type Env } from "./interpolate.js";
import { runSteps } from "../model/steps.js";
import { deferredDocuments, fastDocuments } from "./yaml-fast.js";
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
 * A document of the fast read that passed its schema with nothing to say, as much of it as the rest of the loading
 * needs: where it starts, its name and references, its checked value. Plain data, so that a worker thread can send
 * it (fast-worker.ts).
 */
export interface FastCheck {
  start: number;
  name?: string;
  references?: string[];
  checked?: { kind: CheckedDocument["kind"]; value: CheckedDocument["value"]; partial: boolean };
}

/**
 * The fast read of a text (yaml-fast.ts) and each document against its schema: their summaries when the fast read
 * takes the text and every document passes with nothing to say; else null, and the full way reports. A text with
 * `$` goes the full way: its variables are replaced in the nodes. Yields after each document.
 */
export function* fastChecks(text: string, display: string): Generator<void, FastCheck[] | null> {
  return (yield* fastCheckDocuments(text, display))?.checks ?? null;
}

/** `fastChecks` with the deferred documents the checks were made on, for the thread that made them. */
function* fastCheckDocuments(text: string, display: string): Generator<void, { checks: FastCheck[]; srcs: ParsedDocument[] } | undefined> {
  const docs = text.includes("$") ? undefined : fastDocuments(text, display);
  if (docs === undefined) return undefined;
  const checks: FastCheck[] = [];
  for (const { src, value, start } of docs) {
    yield;
    const result = checkDocument(src, value);
    if (result.diagnostics.length > 0) return undefined;
    const { kind, value: checkedValue, partial } = result.checked ?? {};
    checks.push({
      start,
      ...(result.name !== undefined ? { name: result.name } : {}),
      ...(result.references ? { references: result.references } : {}),
      ...(kind !== undefined ? { checked: { kind, value: checkedValue, partial } as FastCheck["checked"] } : {}),
    });
  }
  return { checks, srcs: docs.map((d) => d.src) };
}

/**
 * Adds the documents of a text that `fastChecks` took to `into`, each with its deferred positions (`srcs`, when the
 * checks were made in this thread; else made here); returns them.
 */
function addFastChecks(
  text: string,
  display: string,
  checks: readonly FastCheck[],
  into: CheckedTexts,
  srcs: readonly ParsedDocument[] = deferredDocuments(text, display, checks.map((c) => c.start)),
): CheckedDocument[] {
  into.objects += checks.length;
  return checks.flatMap((c, k) => {
    const src = srcs[k] as ParsedDocument;
    const checked = c.checked ? ({ ...c.checked, src } as CheckedDocument) : undefined;
    const result: CheckResult = { diagnostics: [], ...(c.name !== undefined ? { name: c.name } : {}), ...(c.references ? { references: c.references } : {}), ...(checked ? { checked } : {}) };
    return addChecked(into, src, result) ?? [];
  });
}

/**
 * Checks every document of one manifest text (shown as `display` in diagnostics), adding what it finds to `into`.
 * Returns the documents of this text that passed their schema. A generator that yields between documents, so that
 * a loader can give the event loop a turn now and then (reads beside the loading go on); `checkManifestText` runs
 * it through. `checks`: what `fastChecks` gave for the text elsewhere (a worker thread), or null to read it the full
 * way; left out, `fastChecks` runs here.
 */
export function* checkManifestTextSteps(
  text: string,
  display: string,
  env: Env,
  into: CheckedTexts,
  checks?: FastCheck[] | null,
): Generator<void, CheckedDocument[]> {
  if (checks === undefined) {
    const here = yield* fastCheckDocuments(text, display);
    if (here !== undefined) return addFastChecks(text, display, here.checks, into, here.srcs);
  } else if (checks !== null) {
    return addFastChecks(text, display, checks, into);
  }
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
