/**
 * Manifest text to YAML documents that remember where every node was written, with the guards hostile input needs
 * (size, binary content, invalid UTF-8, nesting depth, alias bombs) applied before anything expensive runs. Pure:
 * bytes in, documents and diagnostics out.
 */
import { Composer, type CST, isAlias, isMap, isScalar, isSeq, Lexer, LineCounter, Parser, type Document, type Node } from "yaml";
import { withoutQuotedSource } from "../model/confine.js";
import type { Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";

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
  if (nul >= 0) {
    return {
      diagnostic: err(
        { file, ...lineColOfByte(bytes, nul) },
        "file holds NUL bytes: it is binary, not YAML text; remove it or rename it so that it does not end in .yaml or .yml",
      ),
    };
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { diagnostic: err({ file, ...lineColOfByte(bytes, firstInvalidUtf8(bytes)) }, "file is not valid UTF-8 text; save it as UTF-8") };
  }
}

/** 1-based line and column of a character offset. */
export function lineColOf(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, col: offset - lineStart + 1 };
}

/** Line and column (in characters) of a byte offset, decoding leniently up to it. */
export function lineColOfByte(bytes: Uint8Array, offset: number): { line: number; col: number } {
  const before = new TextDecoder("utf-8").decode(bytes.subarray(0, offset));
  return lineColOf(before, before.length);
}

/** Offset of the first byte that starts an invalid UTF-8 sequence. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] ?? 0;
    let n = 0;
    let min = 0;
    if (b < 0x80) n = 0;
    else if (b >= 0xc2 && b <= 0xdf) n = 1;
    else if (b >= 0xe0 && b <= 0xef) [n, min] = [2, 0x800];
    else if (b >= 0xf0 && b <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    if (n > 0) {
      let cp = b & (0x3f >> n);
      for (let k = 1; k <= n; k++) {
        const c = bytes[i + k];
        if (c === undefined || (c & 0xc0) !== 0x80) return i;
        cp = (cp << 6) | (c & 0x3f);
      }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    }
    i += n + 1;
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

  /** The mapping a (possibly missing) field belongs to: its key when it has one, else the document. */
  container(path: ReadonlyArray<PropertyKey>): SourcePos {
    if (path.length <= 1) return this.d.pos;
    const l = locate(this.d.doc, path.slice(0, -1));
    return this.at(l.key) ?? this.at(l.value) ?? this.d.pos;
  }
}

/** First line of a `yaml` error message (the rest repeats the source), without the source text it may quote. */
function firstLine(message: string): string {
  return withoutQuotedSource(message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? message);
}

/**
 * Parses a manifest file's text into documents. Syntax errors become diagnostics and their document is left out;
 * empty documents (nothing, or only comments) are left out silently. Nothing here throws for bad input.
 */
export function parseManifestText(text: string, file: string): { docs: ParsedDocument[]; diagnostics: Diagnostic[] } {
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
  const parsed = composeDocuments(lexemes, lines);
  const mayInterpolate = text.includes("$");
  const docs: ParsedDocument[] = [];
  parsed.forEach((doc) => {
    let broken = false;
    for (const e of doc.errors) {
      broken = true;
      const message =
        e.code === "DUPLICATE_KEY" ? "this key appears twice in the same mapping; keep one of them" : `YAML syntax: ${firstLine(e.message)}; fix the YAML at this position`;
      diagnostics.push(err(at(e.pos[0]), message));
    }
    for (const w of doc.warnings) {
      diagnostics.push({ severity: "warning", pos: at(w.pos[0]), message: `YAML: ${firstLine(w.message)}` });
    }
    if (broken) return;
    const contents = doc.contents;
    // Nothing, only comments, or an explicit null: an empty document.
    if (contents === null || (isScalar(contents) && contents.value === null)) return;
    docs.push({ file, doc, at, pos: at(contents.range?.[0] ?? 0), mayInterpolate });
  });
  return { docs, diagnostics };
}

/** The documents of a text from its lexemes: what `parseAllDocuments` does, without lexing the text a second time. */
function composeDocuments(lexemes: readonly string[], lines: LineCounter): Document.Parsed[] {
  const parser = new Parser(lines.addNewLine);
  function* tokens(): Generator<CST.Token> {
    lines.addNewLine(0);
    for (const lexeme of lexemes) yield* parser.next(lexeme);
    yield* parser.end();
  }
  return Array.from(new Composer({ prettyErrors: false, uniqueKeys: true }).compose(tokens()));
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
    if (/alias count/i.test(message)) {
      return {
        diagnostic: err(d.pos, `the document expands aliases more than ${MAX_ALIAS_COUNT} times, as an alias bomb does; write the values out instead of nesting aliases`),
      };
    }
    return { diagnostic: err(d.pos, `YAML: ${firstLine(message)}; fix the document`) };
  }
}
