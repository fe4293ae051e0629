/**
 * Manifest text to YAML documents that remember where every node was written, with the guards hostile input needs
 * (size, binary content, invalid UTF-8, nesting depth, alias bombs) applied before anything expensive runs. Pure:
 * bytes in, documents and diagnostics out.
 */
import { Composer, type CST, isAlias, isMap, isNode, isScalar, isSeq, Lexer, LineCounter, Parser, type Document, type Node, type YAMLError, YAMLWarning } from "yaml";
import { withoutQuotedSource } from "../model/confine.js";
import { lineColOf, type Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";
import { explainYamlError } from "./yaml-mistakes.js";

/** Largest manifest file read (1 MiB): far above any real manifest, small enough to parse at once. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Deepest nesting of collections accepted: manifests need 4; the YAML composer recurses per level. */
export const MAX_NESTING = 64;
/** Alias expansions allowed per document (the `yaml` package's guard against "billion laughs"). */
export const MAX_ALIAS_COUNT = 100;

/** One YAML document of a manifest file, with the way back from its nodes to lines and columns. */
export interface ParsedDocument {
  file: string;
  doc: Document.Parsed;
  /** The place of an offset of the file's text: a binary search in the table of line starts. */
  at: (offset: number) => SourcePos;
  /** Where the document's content starts. */
  pos: SourcePos;
  /** False when the file's text holds no `$`: no `${VAR}` to replace, so the document need not be walked for them. */
  mayInterpolate: boolean;
}

const err = (pos: SourcePos, message: string): Diagnostic => ({ severity: "error", pos, message });

/** The error of a manifest file of `size` bytes when that is more than `MAX_MANIFEST_BYTES`. */
export function sizeDiagnostic(size: number, file: string): Diagnostic | undefined {
  if (size <= MAX_MANIFEST_BYTES) return undefined;
  const message = `file is ${size} bytes, more than the ${MAX_MANIFEST_BYTES} bytes (1 MiB) a manifest file may hold; split it into several files`;
  return err({ file, line: 1, col: 1 }, message);
}

/**
 * Decodes a manifest file's bytes as UTF-8 text, refusing what cannot be a manifest: more than
 * `MAX_MANIFEST_BYTES`, NUL bytes (a binary file), invalid UTF-8.
 */
export function decodeManifest(bytes: Uint8Array, file: string): { text: string } | { diagnostic: Diagnostic } {
  const tooLarge = sizeDiagnostic(bytes.byteLength, file);
  if (tooLarge) return { diagnostic: tooLarge };
  const nul = bytes.indexOf(0);
  const binary = "file holds NUL bytes: it is binary, not YAML text; remove it or rename it so that it does not end in .yaml or .yml";
  if (nul >= 0) return { diagnostic: err({ file, ...lineColOfByte(bytes, nul) }, binary) };
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { diagnostic: err({ file, ...lineColOfByte(bytes, firstInvalidUtf8(bytes)) }, "file is not valid UTF-8 text; save it as UTF-8") };
  }
}

/** Line and column (in characters) of a byte offset, decoding leniently up to it. */
export function lineColOfByte(bytes: Uint8Array, offset: number): { line: number; col: number } {
  const before = new TextDecoder("utf-8").decode(bytes.subarray(0, offset));
  return lineColOf(before, before.length);
}

/**
 * Offset of the first byte that starts an invalid UTF-8 sequence, or the length when there is none: where the
 * platform's lenient decoder puts its first U+FFFD that the bytes do not spell (EF BF BD).
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  const text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  const encoder = new TextEncoder();
  let at = 0;
  let from = 0;
  for (let i = text.indexOf("\uFFFD"); i >= 0; i = text.indexOf("\uFFFD", i + 1)) {
    at += encoder.encode(text.slice(from, i)).length;
    if (bytes[at] !== 0xef || bytes[at + 1] !== 0xbf || bytes[at + 2] !== 0xbd) return at;
    at += 3;
    from = i + 1;
  }
  return bytes.length;
}

/**
 * Offset where the nesting of collections first exceeds `max`, or undefined. Runs on the lexer's tokens, which cost
 * linear time and no recursion, so that a document of a million `[` is refused before the composer sees it. Counts
 * flow collections, block indentation levels and compact block indicators (`- - -`); conservative, not exact.
 */
export function findExcessiveNesting(text: string | Iterable<string>, max = MAX_NESTING): number | undefined {
  const lexemes = typeof text === "string" ? new Lexer().lex(text) : text;
  let offset = 0;
  let flow = 0;
  let indicators = 0;
  let atLineStart = true;
  let indent = 0;
  const indents: number[] = [];
  for (const token of lexemes) {
    const at = offset;
    offset += token.length;
    if (token === "\n" || token === "\r\n") {
      atLineStart = true;
      indent = 0;
      indicators = 0;
      continue;
    }
    // Control characters mark token types (scalar, document mode); they hold no source text.
    if (token.length === 1 && token.charCodeAt(0) < 0x20) {
      offset -= 1;
      continue;
    }
    if (atLineStart) {
      if (/^[ \t]+$/.test(token)) {
        indent = token.length;
        continue;
      }
      atLineStart = false;
      if (flow === 0 && !token.startsWith("#")) {
        while (indents.length > 0 && (indents[indents.length - 1] ?? 0) > indent) indents.pop();
        if (indents.length === 0 || (indents[indents.length - 1] ?? 0) < indent) indents.push(indent);
        if (indents.length > max) return at;
      }
    }
    if (token.includes("\n")) {
      // A multi-line scalar: the next token starts a line of its own.
      atLineStart = token.endsWith("\n");
      indent = 0;
      indicators = 0;
      continue;
    }
    if (token === "[" || token === "{") flow++;
    else if (token === "]" || token === "}") flow = Math.max(0, flow - 1);
    else if (flow === 0 && (token === "-" || token === "?")) indicators++;
    else continue;
    if (flow + indicators + indents.length > max) return at;
  }
  return undefined;
}

/** Follows a path of keys and indexes from a document's root, through aliases: the value node, and the key node that names it. */
function locate(doc: Document.Parsed, path: ReadonlyArray<PropertyKey>): { value?: Node; key?: Node } {
  let cur: unknown = doc.contents;
  let key: Node | undefined;
  for (const seg of path) {
    if (isAlias(cur)) cur = cur.resolve(doc);
    if (isMap(cur)) {
      // A key as the document's plain value spells it.
      const pair = cur.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(seg));
      if (!pair) return {};
      key = pair.key as Node;
      cur = pair.value;
    } else if (isSeq(cur) && typeof seg === "number") {
      key = undefined;
      cur = cur.items[seg];
      if (cur === undefined) return {};
    } else {
      return {};
    }
  }
  return { value: (cur ?? undefined) as Node | undefined, key };
}

/** Start offset of a node, or undefined when it has no source (an empty value). */
export function startOf(node: Node | undefined): number | undefined {
  if (!node?.range) return undefined;
  if (isScalar(node) && node.value === null && node.range[0] === node.range[1]) return undefined;
  return node.range[0];
}

/**
 * Positions of the nodes of one document, by path: what every diagnostic is pinned to. Each is found when asked,
 * from the node's range and the file's table of line starts.
 */
export class Pinner {
  constructor(private readonly d: ParsedDocument) {}

  private at(node: Node | undefined): SourcePos | undefined {
    const offset = startOf(node);
    return offset === undefined ? undefined : this.d.at(offset);
  }

  /** The value at a path, else its key, else the mapping it belongs to. */
  value(path: ReadonlyArray<PropertyKey>): SourcePos {
    const l = locate(this.d.doc, path);
    return this.at(l.value) ?? this.at(l.key) ?? this.container(path);
  }

  /** The key at a path, else the value. */
  key(path: ReadonlyArray<PropertyKey>): SourcePos {
    return this.at(locate(this.d.doc, path).key) ?? this.value(path);
  }

  /**
   * The place of the character at `offset` in the text value at a path: exact when the scalar is written on one line
   * as its value reads (plain, or quoted without escapes), else the scalar's start (a block or folded scalar, escapes).
   */
  within(path: ReadonlyArray<PropertyKey>, offset: number): SourcePos {
    const node = locate(this.d.doc, path).value;
    if (!isScalar(node) || typeof node.value !== "string" || !node.range) return this.value(path);
    const written = node.range[1] - node.range[0];
    const quote = node.type === "QUOTE_SINGLE" || node.type === "QUOTE_DOUBLE" ? 1 : 0;
    const exact = (node.type === "PLAIN" || quote === 1) && !node.value.includes("\n") && written === node.value.length + 2 * quote;
    return this.d.at(node.range[0] + (exact ? quote + Math.min(offset, node.value.length) : 0));
  }

  /** The mapping a (possibly missing) field belongs to: its key when it has one, else the document. */
  container(path: ReadonlyArray<PropertyKey>): SourcePos {
    if (path.length <= 1) return this.d.pos;
    const l = locate(this.d.doc, path.slice(0, -1));
    return this.at(l.key) ?? this.at(l.value) ?? this.d.pos;
  }
}

/** A problem the `yaml` package found, as a diagnostic. A tag outside the core schema is an error: its value would be read as text. */
function yamlProblem(e: YAMLError, at: (offset: number) => SourcePos): Diagnostic {
  const tagged = e.code === "TAG_RESOLVE_FAILED" ? /^(Unresolved tag|Could not resolve tag): (.*)$/.exec(e.message.split("\n")[0] ?? "") : null;
  // A tag is quoted only when it looks like one, so that no other text of the file rides along with it.
  const tag = tagged?.[2]?.replace(/^tag:yaml\.org,2002:/, "!!");
  const shown = tag !== undefined && /^!(?:[\w.-]*!)?[\w.-]{1,40}$/.test(tag) ? tag : undefined;
  if (tagged?.[1] === "Unresolved tag") {
    const core = "YAML 1.2's core schema has only !!str, !!int, !!float, !!bool, !!null, !!map and !!seq: remove the tag";
    return err(at(e.pos[0]), `unknown tag${shown === undefined ? "" : ` ${shown}`}; ${core}`);
  }
  const message = tagged && shown !== undefined ? `${tagged[1]}: ${shown}` : firstLine(e.message);
  if (e instanceof YAMLWarning) return { severity: "warning", pos: at(e.pos[0]), message: `YAML: ${message}` };
  return err(at(e.pos[0]), `YAML syntax: ${message}; fix the YAML at this position`);
}

/**
 * The `yaml` package's problems of a document as diagnostics. A line indented more than the key before it makes YAML
 * read that key's value as running on into the line, then find a `:` in it: the package says so twice, at the value
 * on the line before; that is one error, said at the line that moved.
 */
function yamlProblems(doc: Document.Parsed, text: string, at: (offset: number) => SourcePos): Diagnostic[] {
  // The line after the value, when the key YAML reads runs on into it (a quoted key written over lines does not).
  const nextLine = (e: YAMLError) => (e.code === "MULTILINE_IMPLICIT_KEY" && !/["']/.test(text.charAt(e.pos[0])) ? text.indexOf("\n", e.pos[0]) + 1 : 0);
  // A common mistake is said once, in its own words, instead of the errors it made the parser trip over.
  const first = doc.errors[0];
  const mistake = first === undefined ? undefined : explainYamlError(first, text);
  const errors = mistake === undefined ? doc.errors : doc.errors.filter((e) => !mistake.explains(e));
  const said = mistake === undefined ? [] : [err(at(mistake.offset), mistake.message)];
  const moved = new Map(errors.filter((e) => nextLine(e) > 0 && nextLine(e) < e.pos[1]).map((e) => [e.pos[0], e]));
  return said.concat(
    [...errors, ...doc.warnings].flatMap((e) => {
      const line = moved.get(e.pos[0]);
      if (line === undefined) return [yamlProblem(e, at)];
      if (e !== line) return [];
      const start = nextLine(e) + (/^[ \t]*/.exec(text.slice(nextLine(e), e.pos[1]))?.[0].length ?? 0);
      return [err(at(start), "this line is indented more than the line before it, so YAML reads it as part of the value above; indent it like the key it belongs beside")];
    }),
  );
}

/**
 * Errors of mapping keys that the plain value would lose or misread, each alias key resolved first: a key repeated
 * (as written, through an alias, or spelled another way: `1` and `"1"` are both the key "1"), a mapping or list used
 * as a key, and a plain `<<`, which merges mappings in YAML 1.1 only. `misread`: a key of the last two kinds, whose
 * plain value would be nonsense; a repeated key leaves a value the schema can still check (the last one).
 */
function checkKeys(doc: Document.Parsed, at: (offset: number) => SourcePos): { diagnostics: Diagnostic[]; misread: boolean } {
  // Anchors in document order: an alias names the last anchor of its name before it.
  const anchors = new Map<string, Node>();
  const out: Diagnostic[] = [];
  let misread = false;
  const visit = (node: unknown): void => {
    if (!isNode(node) || isAlias(node)) return;
    if (node.anchor) anchors.set(node.anchor, node);
    if (isSeq(node)) node.items.forEach(visit);
    if (!isMap(node)) return;
    const seen = new Set<string>();
    for (const { key, value } of node.items) {
      visit(key);
      const resolved = isAlias(key) ? anchors.get(key.source) : key;
      const problem = (message: string) => out.push(err(at(startOf(key as Node) ?? node.range?.[0] ?? 0), message)) > 0;
      if (isNode(resolved) && !isScalar(resolved)) misread = problem("a key must be text, not a mapping or a list; write the key as text");
      else if (isScalar(resolved) && resolved.type === "PLAIN" && resolved.value === "<<")
        misread = problem("<< merges mappings in YAML 1.1 only, and manifests are YAML 1.2; write the fields out");
      else if (resolved !== undefined || !isAlias(key)) {
        const text = String((resolved as { value?: unknown } | null)?.value ?? "");
        if (seen.has(text)) problem("this key appears twice in the same mapping; keep one of them");
        seen.add(text);
      }
      visit(value);
    }
  };
  visit(doc.contents);
  return { diagnostics: out, misread };
}

/** First line of a `yaml` error message (the rest repeats the source), without the source text it may quote. */
function firstLine(message: string): string {
  return withoutQuotedSource(message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? message);
}

/**
 * Parses a manifest file's text into documents. Syntax errors become diagnostics and their document is left out;
 * empty documents (nothing, or only comments) are left out silently, unless `keepEmpty` (`fmt` keeps their
 * comments). Nothing here throws for bad input.
 */
export function parseManifestText(text: string, file: string, keepEmpty = false): { docs: ParsedDocument[]; diagnostics: Diagnostic[] } {
  const lines = new LineCounter();
  const at = (offset: number): SourcePos => ({ file, ...lines.linePos(offset) });
  const diagnostics: Diagnostic[] = [];
  // One pass of the lexer serves both the nesting guard and the parser.
  const lexemes = Array.from(new Lexer().lex(text));
  const deep = findExcessiveNesting(lexemes);
  if (deep !== undefined) {
    // The line counter is filled by parsing, which this text does not reach.
    const message = `collections are nested more than ${MAX_NESTING} levels deep; a manifest needs a few levels, flatten it`;
    return { docs: [], diagnostics: [err({ file, ...lineColOf(text, deep) }, message)] };
  }
  const parsed = composeDocuments(lexemes, lines, at, diagnostics);
  const mayInterpolate = text.includes("$");
  const docs: ParsedDocument[] = [];
  for (const doc of parsed) {
    const problems = yamlProblems(doc, text, at);
    const unreadable = problems.some((p) => p.severity === "error");
    const keys = unreadable ? undefined : checkKeys(doc, at);
    diagnostics.push(...problems, ...(keys?.diagnostics ?? []));
    const contents = doc.contents;
    // A document with a syntax error or a misread key is left out (a repeated key is not: its other problems are
    // reported too); so is one with nothing, only comments, or an explicit null, unless asked for (`fmt`).
    if (unreadable || keys?.misread) continue;
    if (!keepEmpty && (contents === null || (isScalar(contents) && contents.value === null))) continue;
    docs.push({ file, doc, at, pos: at(contents?.range?.[0] ?? 0), mayInterpolate });
  }
  return { docs, diagnostics };
}

/** The one directive a manifest may hold: any other would change how the file is read, or declare tags it may not use. */
const YAML_1_2 = /^%YAML[ \t]+1\.2$/;

/** The error of a directive other than `%YAML 1.2`. */
function directiveError(source: string, pos: SourcePos): Diagnostic {
  const what = source.startsWith("%YAML") ? `${source} asks for another YAML version` : `the ${source.split(/[ \t]/)[0]} directive is not supported`;
  return err(pos, `${what}; remove the directive: manifests are YAML 1.2`);
}

/**
 * The documents of a text from its lexemes: what `parseAllDocuments` does, without lexing the text a second time,
 * and always with YAML 1.2's core schema. A directive other than `%YAML 1.2` is left out and reported in
 * `diagnostics`, so that no `%YAML 1.1` reads `yes` as true or `010` as 8.
 */
function composeDocuments(lexemes: readonly string[], lines: LineCounter, at: (offset: number) => SourcePos, diagnostics: Diagnostic[]): Document.Parsed[] {
  const options = { prettyErrors: false, uniqueKeys: false, version: "1.2", schema: "core", merge: false, resolveKnownTags: false } as const;
  const parser = new Parser(lines.addNewLine);
  const composer = new Composer(options);
  const docs: Document.Parsed[] = [];
  // Each token goes straight from the parser to the composer: a generator between them made the parse 5 to 20 % slower.
  const take = (tokens: Iterable<CST.Token>): void => {
    for (const token of tokens) {
      if (token.type === "directive" && !YAML_1_2.test(token.source)) diagnostics.push(directiveError(token.source, at(token.offset)));
      else docs.push(...composer.next(token));
    }
  };
  lines.addNewLine(0);
  for (const lexeme of lexemes) take(parser.next(lexeme));
  take(parser.end());
  docs.push(...composer.end());
  return docs;
}

/**
 * The plain value of a document (mappings as objects), or a diagnostic when building it failed: too many alias
 * expansions (`MAX_ALIAS_COUNT`), an unresolved alias, or nesting the composer could not handle.
 */
export function toPlain(d: ParsedDocument): { value: unknown } | { diagnostic: Diagnostic } {
  try {
    return { value: d.doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const bomb = `the document expands aliases more than ${MAX_ALIAS_COUNT} times, as an alias bomb does; write the values out instead of nesting aliases`;
    return { diagnostic: err(d.pos, /alias count/i.test(message) ? bomb : `YAML: ${firstLine(message)}; fix the document`) };
  }
}

/**
 * A file's text that holds one YAML document (the project file, a policy file, a policy test case, the server's
 * fixtures), read as manifests are: a second document is an error (`second` says what to do), and so is a value the
 * YAML cannot give. `doc` and `value` are there when nothing is an error; `doc` is null for a file with no document.
 */
export function parseOneDocument(
  text: string,
  file: string,
  second: string,
): { doc: ParsedDocument | null; value: unknown; diagnostics: Diagnostic[] } | { errors: Diagnostic[] } {
  const parsed = parseManifestText(text, file);
  const [doc, other] = parsed.docs;
  const diagnostics = [...parsed.diagnostics];
  if (other) diagnostics.push(err(other.pos, second));
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) return { errors };
  if (!doc) return { doc: null, value: undefined, diagnostics };
  const plain = toPlain(doc);
  return "diagnostic" in plain ? { errors: [plain.diagnostic] } : { doc, value: plain.value, diagnostics };
}
