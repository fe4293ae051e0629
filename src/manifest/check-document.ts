/**
 * One manifest document against the zod schema of its kind. Every zod issue becomes a diagnostic pinned to the node
 * it is about: the key of an unknown field, the value of a bad value, the mapping a missing field belongs to.
 * Pure.
 */
import type { z } from "zod";
import { isJsonObject as isPlainObject } from "../model/canonical.js";
import { fieldOrderOf } from "../model/field-order.js";
import type { Diagnostic } from "../model/errors.js";
import { NAME_MAX, NAME_PATTERN, type SourcePos } from "../model/state.js";
import { SAML_GENERATED_FIELDS, unstorableText } from "../model/wire.js";
import { KIND_SCHEMAS, MANIFEST_KINDS, describeValue, type EdgeRouteManifest, type ManifestKind, type WeightedBackendManifest } from "../model/manifest-schema.js";
import { closest, didYouMean } from "../model/suggest.js";
import { Pinner, type ParsedDocument } from "./yaml-source.js";

/**
 * A document that passed its schema. `partial`: it had errors and this is what is left once the offending values
 * are taken out; later rules still check it (so every problem is reported) but it never reaches the DesiredState.
 */
export type CheckedDocument =
  | { kind: "WeightedBackend"; value: WeightedBackendManifest; src: ParsedDocument; partial: boolean }
  | { kind: "EdgeRoute"; value: EdgeRouteManifest; src: ParsedDocument; partial: boolean };

export interface CheckResult {
  /** The document's kind when it names a known one (even if the rest is invalid). */
  kind?: ManifestKind;
  /** A WeightedBackend's name when it is a string (even if the rest is invalid): references to it then resolve. */
  name?: string;
  /** A WeightedBackend's children named like WeightedBackends, found even when the rest is invalid: unresolved ones are reported in the same run. */
  references?: string[];
  /** The validated document (possibly `partial`), when there is enough of it for the rules between objects. */
  checked?: CheckedDocument;
  diagnostics: Diagnostic[];
}

type Issue = z.core.$ZodIssue;

const dotted = (path: ReadonlyArray<PropertyKey>): string => path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");

const EXPECTED: Record<string, string> = {
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "a mapping",
  record: "a mapping",
  array: "a list",
};

/** A hint for the commonest mistakes of type: YAML 1.1 booleans, quoted numbers, empty values. */
function typeHint(expected: string, input: unknown): string {
  if (input === null) return "; give a value or remove the field";
  if (expected === "boolean" && typeof input === "string") {
    return /^(true|false)$/i.test(input) ? "; write true or false without quotes" : "; YAML 1.2 reads yes, no, on and off as text: write true or false";
  }
  if ((expected === "number" || expected === "int") && typeof input === "string" && input.trim() !== "" && Number.isFinite(Number(input))) {
    return "; write the number without quotes";
  }
  if (expected === "string" && (typeof input === "number" || typeof input === "boolean")) return "; put the value in quotes";
  return "";
}

/** Messages for issues the schemas leave to the caller; they name no field (the path is prefixed later). */
function genericMessage(iss: z.core.$ZodRawIssue): string | undefined {
  switch (iss.code) {
    case "invalid_type": {
      const expected = String(iss.expected);
      return `expected ${EXPECTED[expected] ?? expected}, got ${describeValue(iss.input)}${typeHint(expected, iss.input)}`;
    }
    case "invalid_value": {
      const values = iss.values.map((v) => String(v));
      return `${describeValue(iss.input)} is not allowed; use ${values.join(" or ")}` + (typeof iss.input === "string" ? didYouMean(iss.input, values) : "");
    }
    default:
      return undefined;
  }
}

/** Hints for required fields, by path. */
const REQUIRED_HINT: Record<string, string> = {
  name: "add name: with a name unique among the WeightedBackend manifests",
  backends: "add backends: with the children and their weights ({} for none)",
  edge: "add edge: with the edghts_ id of the HTTPS edge",
  route: "add route: with the edghtsrt_ id of the route",
  "circuit_breaker.tripped_duration": "add tripped_duration: the seconds the circuit stays open, more than 0",
  "circuit_breaker.rolling_window": "add rolling_window: the seconds of the window errors are counted over, more than 0",
  "circuit_breaker.num_buckets": "add num_buckets: the buckets of the window, 1 to 128",
  "circuit_breaker.error_threshold_percentage": "add error_threshold_percentage: the error rate that trips the circuit, a fraction from 0 to 1",
};

/** What a field takes, for a value no branch of its union accepts. */
const UNION_EXPECTED: Record<string, string> = {
  metadata: "a mapping, or JSON text of an object",
  saml: "a mapping of settings, or absent",
  circuit_breaker: "a mapping of settings, or absent",
};

/** The field names of the object schema at a path, for "did you mean" (objects, optionals and unions followed). */
function fieldsAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  let order = fieldOrderOf(schema);
  for (const seg of path) order = order?.nested.get(String(seg));
  return [...(order?.keys ?? [])];
}

/**
 * The issues of a union as those of the branch the input was meant for: an object input is judged by the object
 * branch (so `saml: {forceauthn: true}` reports the unknown field, not "expected absent").
 */
function expandUnion(issue: Issue & { code: "invalid_union" }): Issue[] | undefined {
  const rootFailure = (branch: Issue[]): boolean => branch.some((i) => i.path.length === 0 && (i.code === "invalid_type" || i.code === "invalid_value"));
  const meant = issue.errors.filter((branch) => !rootFailure(branch));
  if (meant.length !== 1) return undefined;
  return (meant[0] ?? []).map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as Issue);
}

/** One message for an input that no branch of a union takes. */
function unionMessage(issue: Issue & { code: "invalid_union" }, input: unknown, where: string): string {
  const root = issue.errors.flat().filter((i) => i.path.length === 0);
  const words = root.flatMap((i) => (i.code === "invalid_value" ? i.values.map(String) : []));
  const wants = root.flatMap((i) => (i.code === "invalid_value" ? i.values.map(String) : i.code === "invalid_type" ? [EXPECTED[i.expected] ?? i.expected] : []));
  const hint = typeof input === "string" ? didYouMean(input, words) : "";
  return `expected ${UNION_EXPECTED[where] ?? [...new Set(wants)].join(" or ")}, got ${describeValue(input)}${hint}`;
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let cur = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg as string];
  }
  return cur;
}

/** Issues with every union the input was meant for replaced by that branch's issues. */
function flatten(issues: Issue[]): Issue[] {
  return issues.flatMap((issue) => {
    const expanded = issue.code === "invalid_union" ? expandUnion(issue) : undefined;
    return expanded ? flatten(expanded) : [issue];
  });
}

const startsWith = (path: ReadonlyArray<PropertyKey>, prefix: ReadonlyArray<PropertyKey>): boolean =>
  prefix.length <= path.length && prefix.every((p, i) => String(p) === String(path[i]));

/** Converts (flattened) zod issues to diagnostics, one per problem, deduplicated by field. */
export function issuesToDiagnostics(issues: Issue[], d: ParsedDocument, plain: unknown, schema: z.ZodType): Diagnostic[] {
  const pin = new Pinner(d);
  // One diagnostic per field (or key): the first issue about it.
  const out = new Map<string, Diagnostic>();
  const add = (dedupeKey: string, pos: SourcePos, message: string): void => {
    if (!out.has(dedupeKey)) out.set(dedupeKey, { severity: "error", pos, message });
  };
  // "backend" written for "backends": the unknown field's message says it all; "missing backends" would repeat it.
  const suggested = new Set<string>();
  for (const issue of issues) {
    if (issue.code !== "unrecognized_keys") continue;
    const known = fieldsAt(schema, issue.path);
    for (const key of issue.keys) {
      const c = closest(key, known);
      if (c !== undefined) suggested.add(dotted([...issue.path, c]));
    }
  }
  for (const issue of issues) {
    const path = issue.path;
    const where = dotted(path);
    switch (issue.code) {
      case "unrecognized_keys": {
        const known = fieldsAt(schema, path);
        for (const key of issue.keys) {
          const field = dotted([...path, key]);
          const generated = path.length === 1 && path[0] === "saml" && (SAML_GENERATED_FIELDS as readonly string[]).includes(key);
          const hint = generated
            ? `; ${key} is generated by the API and cannot be set: remove it`
            : didYouMean(key, known, known.length > 0 ? `; remove it (the fields here are ${known.join(", ")})` : "; remove it");
          add(`key:${field}`, pin.key([...path, key]), `unknown field ${field}${hint}`);
        }
        break;
      }
      case "invalid_union":
        add(where, pin.value(path), `${where}: ${unionMessage(issue, valueAt(plain, path), where)}`);
        break;
      case "invalid_key": {
        const nested = issue.issues[0]?.message ?? issue.message;
        add(`key:${where}`, pin.key(path), `${dotted(path.slice(0, -1))}: ${nested}`);
        break;
      }
      case "invalid_type":
        if (valueAt(plain, path) !== undefined) add(where, pin.value(path), `${where}: ${issue.message}`);
        else if (!suggested.has(where)) add(where, pin.container(path), `missing required field ${where}; ${REQUIRED_HINT[where] ?? "add it"}`);
        break;
      default:
        add(where, pin.value(path), `${where}: ${issue.message}`);
    }
  }
  return [...out.values()];
}

function deleteAt(root: unknown, path: ReadonlyArray<PropertyKey>): void {
  const parent = valueAt(root, path.slice(0, -1));
  const last = path[path.length - 1];
  if (last === undefined || parent === null || typeof parent !== "object") return;
  if (Array.isArray(parent) && typeof last === "number") parent.splice(last, 1);
  else delete (parent as Record<string, unknown>)[String(last)];
}

/**
 * The document with every offending value taken out, when what is left is still a valid document; else undefined.
 * Later checks (references, cycles, duplicates, IdP metadata files) then run on what is left, so that one run
 * reports every problem of a document, not only its schema errors. A missing required field of a module drops the
 * module; a missing required field of the document itself gives up.
 */
function salvage(schema: z.ZodType, plain: Record<string, unknown>, issues: Issue[]): unknown {
  const value = structuredClone(plain);
  let current = issues;
  for (let round = 0; round < 4; round++) {
    for (const issue of current) {
      const path = issue.path;
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) deleteAt(value, [...path, key]);
      } else if (issue.code === "invalid_type" && valueAt(value, path) === undefined) {
        if (path.length <= 1) return undefined;
        deleteAt(value, path.slice(0, -1));
      } else if (path.length === 0) {
        return undefined;
      } else {
        deleteAt(value, path);
      }
    }
    const again = schema.safeParse(value, { error: genericMessage });
    if (again.success) return again.data;
    current = flatten(again.error.issues);
  }
  return undefined;
}

/**
 * A plain value against any schema, each issue a diagnostic pinned in `d` with the manifests' wording (the project
 * file shares it): the parsed value, or the diagnostics.
 */
export function checkAgainstSchema<T>(schema: z.ZodType<T>, d: ParsedDocument, plain: unknown): { data?: T; diagnostics: Diagnostic[] } {
  const result = schema.safeParse(plain, { reportInput: true, error: genericMessage });
  if (result.success) return { data: result.data, diagnostics: [] };
  return { diagnostics: issuesToDiagnostics(flatten(result.error.issues), d, plain, schema) };
}

type Fault = { path: PropertyKey[]; key: boolean; why: string };

/**
 * The keys and text values of plain data that `why` finds fault with, each with its path and why (what is under a
 * key found is not searched). One path is kept and copied only for what is found, since every document is searched
 * and almost none has one.
 */
function faultyTexts(value: unknown, why: (text: string, key: boolean) => string | undefined, path: PropertyKey[] = [], found: Fault[] = []): Fault[] {
  if (typeof value === "string") {
    const fault = why(value, false);
    if (fault) found.push({ path: [...path], key: false, why: fault });
  } else if (Array.isArray(value) || isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      path.push(Array.isArray(value) ? Number(k) : k);
      const fault = Array.isArray(value) ? undefined : why(k, true);
      if (fault) found.push({ path: [...path], key: true, why: fault });
      else faultyTexts(v, why, path, found);
      path.pop();
    }
  }
  return found;
}

/** Paths of every `__proto__` key: JavaScript objects cannot hold it as data, so it would be dropped silently. */
export function protoKeyPaths(value: unknown): PropertyKey[][] {
  return faultyTexts(value, (text, key) => (key && text === "__proto__" ? text : undefined)).map((f) => f.path);
}

/**
 * Checks one document: a mapping, with a known `kind`, valid against that kind's schema. Problems are returned,
 * never thrown. Values under `unresolved` (variables that could not be replaced, already reported) are not judged
 * again. A document with errors may still come back as `checked` with `partial: true` (see `salvage`).
 */
export function checkDocument(d: ParsedDocument, plain: unknown, unresolved: ReadonlyArray<ReadonlyArray<PropertyKey>> = []): CheckResult {
  const pin = new Pinner(d);
  const refuse = (pos: SourcePos, message: string): CheckResult => ({ diagnostics: [{ severity: "error", pos, message }] });
  const kindHint = "kind: WeightedBackend or kind: EdgeRoute";
  // Its shape, never its text: a file named by mistake (a key file) is not a manifest, and is not to be printed.
  const shape = Array.isArray(plain) ? "a list" : typeof plain === "string" ? "text" : typeof plain === "number" ? "a number" : "a single value";
  if (!isPlainObject(plain)) return refuse(d.pos, `a manifest document must be a mapping with a kind, not ${shape}; start it with ${kindHint}`);
  const kind = plain.kind;
  if (kind === undefined) return refuse(d.pos, `missing kind; add ${kindHint}`);
  if (typeof kind !== "string") return refuse(pin.value(["kind"]), `kind is ${describeValue(kind)}; write ${kindHint}`);
  if (!(MANIFEST_KINDS as readonly string[]).includes(kind)) {
    return refuse(pin.value(["kind"]), `unknown kind ${JSON.stringify(kind)}${didYouMean(kind, MANIFEST_KINDS, "; use WeightedBackend or EdgeRoute")}`);
  }
  // Keys and values the document cannot keep are reported and taken out before the schema sees it.
  const removed: Diagnostic[] = [];
  for (const p of protoKeyPaths(plain)) {
    removed.push({ severity: "error", pos: pin.key(p), message: `${dotted(p)}: the key __proto__ cannot be used; rename it` });
    deleteAt(plain, p);
  }
  // What the API cannot store as written (a NUL, a lone surrogate, which a YAML escape such as "\0" or "\uD800" can
  // spell): the plan would show it, and the API would refuse the write. A key is not quoted: it holds what cannot be printed.
  for (const u of faultyTexts(plain, unstorableText)) {
    const what = u.key ? `${u.path.length > 1 ? `${dotted(u.path.slice(0, -1))}: ` : ""}a key` : `${dotted(u.path)}:`;
    removed.push({ severity: "error", pos: u.key ? pin.key(u.path) : pin.value(u.path), message: `${what} ${u.why}` });
    deleteAt(plain, u.path);
  }
  const k = kind as ManifestKind;
  const name = k === "WeightedBackend" && typeof plain.name === "string" ? plain.name : undefined;
  const references =
    k === "WeightedBackend" && isPlainObject(plain.backends) ? Object.keys(plain.backends).filter((key) => NAME_PATTERN.test(key) && key.length <= NAME_MAX) : undefined;
  const schema = KIND_SCHEMAS[k] as z.ZodType;
  const result = schema.safeParse(plain, { reportInput: true, error: genericMessage });
  const issues = result.success ? [] : flatten(result.error.issues);
  const reported = issues.filter((i) => !unresolved.some((u) => startsWith(i.path, u)));
  const diagnostics = [...removed, ...issuesToDiagnostics(reported, d, plain, schema)];
  const data = result.success ? result.data : salvage(schema, plain, issues);
  const partial = !result.success || unresolved.length > 0 || removed.length > 0;
  const checked = data === undefined ? undefined : ({ kind: k, value: data, src: d, partial } as CheckedDocument);
  return { kind: k, name, ...(references ? { references } : {}), ...(checked ? { checked } : {}), diagnostics };
}
