/**
 * Manifest text to YAML documents that remember where every node was written, with the guards hostile input needs
 * (size, binary content, invalid UTF-8, nesting depth, alias bombs) applied before anything expensive runs. Pure:
 * bytes in, documents and diagnostics out.
 */
import { Composer, type CST, isAlias, isMap, isScalar, isSeq, Lexer, LineCounter, Parser, type Document, type Node } from "yaml";
import type { Diagnostic } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";

/** Largest manifest file read (1 MiB): far above any real manifest, small enough to parse at once. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Deepest nesting of collections accepted: manifests need 4; the YAML composer recurses per level. */
export const MAX_NESTING = 64;
/** Alias expansions allowed per document (the `yaml` package's guard against "billion laughs"). */
export const MAX_ALIAS_COUNT = 100;

/**
 * Converts offsets of one text to 1-based line and column. `base`: where the text the offsets count in starts in
 * the file (a document parsed alone), 0 for the whole file.
 */
export class SourceMap {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
    private readonly base = 0,
  ) {}
  at(offset: number): SourcePos {
    const { line, col } = this.lines.linePos(this.base + offset);
    return { file: this.file, line, col };
  }
}

/** One YAML document of a manifest file, with the way back from its nodes to lines and columns. */
export interface ParsedDocument {
  file: string;
  doc: Document.Parsed;
  map: SourceMap;
  /** Where the document's content starts. */
  pos: SourcePos;
  /** False when the file's text holds no `$`: no `${VAR}` to replace, so the document need not be walked for them. */
  mayInterpolate: boolean;
}

const err = (pos: SourcePos, message: string): Diagnostic => ({ severity: "error", pos, message });

/**
 * Decodes a manifest file's bytes as UTF-8 text, refusing what cannot be a manifest: more than
 * `MAX_MANIFEST_BYTES`, NUL bytes (a binary file), invalid UTF-8.
 */
export function decodeManifest(bytes: Uint8Array, file: string): { text: string } | { diagnostic: Diagnostic } {
  const start = { file, line: 1, col: 1 };
  if (bytes.byteLength > MAX_MANIFEST_BYTES) {
    return {
      diagnostic: err(
        start,
        `file is ${bytes.byteLength} bytes, more than the ${MAX_MANIFEST_BYTES} bytes (1 MiB) a manifest file may hold; split it into several files`,
      ),
    };
  }
  const nul = bytes.indexOf(0);
  if (nul >= 0) {
    return { diagnostic: err(positionOfByte(bytes, nul, file), "file holds NUL bytes: it is binary, not YAML text; remove it or rename it so that it does not end in .yaml or .yml") };
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { diagnostic: err(positionOfByte(bytes, firstInvalidUtf8(bytes), file), "file is not valid UTF-8 text; save it as UTF-8") };
  }
}

/** Line and column (in characters) of a byte offset, decoding leniently up to it. */
function positionOfByte(bytes: Uint8Array, offset: number, file: string): SourcePos {
  const before = new TextDecoder("utf-8").decode(bytes.subarray(0, offset));
  const lines = before.split("\n");
  return { file, line: lines.length, col: (lines[lines.length - 1]?.length ?? 0) + 1 };
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

/** Keys of a mapping node as the document's plain value spells them. */
function keyText(key: unknown): string {
  if (isScalar(key)) return String(key.value);
  return String(key);
}

/** What `locate` found at a path: the value node, the key node that names it, and the deepest node reached. */
export interface Located {
  value?: Node;
  key?: Node;
  /** The deepest collection reached on the way (the mapping a missing field belongs to). */
  parent?: Node;
  parentKey?: Node;
}

/** Follows a path of keys and indexes from a document's root, through aliases. */
export function locate(doc: Document.Parsed, path: ReadonlyArray<PropertyKey>): Located {
  let cur: unknown = doc.contents;
  let key: Node | undefined;
  let parent: Node | undefined;
  let parentKey: Node | undefined;
  for (const seg of path) {
    if (isAlias(cur)) cur = cur.resolve(doc);
    if (isMap(cur)) {
      parent = cur;
      parentKey = key;
      const pair = cur.items.find((p) => keyText(p.key) === String(seg));
      if (!pair) return { parent, parentKey };
      key = pair.key as Node;
      cur = pair.value;
    } else if (isSeq(cur) && typeof seg === "number") {
      parent = cur;
      parentKey = key;
      const item = cur.items[seg];
      if (item === undefined) return { parent, parentKey };
      key = undefined;
      cur = item;
    } else {
      return { parent, parentKey };
    }
  }
  return { value: (cur ?? undefined) as Node | undefined, key, parent, parentKey };
}

/** Start offset of a node, or undefined when it has no source (an empty value). */
export function startOf(node: Node | undefined): number | undefined {
  if (!node?.range) return undefined;
  if (isScalar(node) && node.value === null && node.range[0] === node.range[1]) return undefined;
  return node.range[0];
}

/** First line of a `yaml` error message (the rest repeats the source). */
function firstLine(message: string): string {
  return message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? message;
}

/**
 * Parses a manifest file's text into documents. Syntax errors become diagnostics and their document is left out;
 * empty documents (nothing, or only comments) are left out silently. Nothing here throws for bad input.
 */
export function parseManifestText(text: string, file: string): { docs: ParsedDocument[]; diagnostics: Diagnostic[] } {
  const lines = new LineCounter();
  const map = new SourceMap(file, lines);
  const diagnostics: Diagnostic[] = [];
  // One pass of the lexer serves both the nesting guard and the parser.
  const lexemes = Array.from(new Lexer().lex(text));
  const deep = findExcessiveNesting(lexemes);
  if (deep !== undefined) {
    // Positions need the line counter, which parsing fills; count lines here instead.
    const before = text.slice(0, deep).split("\n");
    diagnostics.push(
      err(
        { file, line: before.length, col: (before[before.length - 1]?.length ?? 0) + 1 },
        `collections are nested more than ${MAX_NESTING} levels deep; a manifest needs a few levels, flatten it`,
      ),
    );
    return { docs: [], diagnostics };
  }
  const parsed = composeDocuments(lexemes, lines);
  const mayInterpolate = text.includes("$");
  const docs: ParsedDocument[] = [];
  parsed.forEach((doc) => {
    let broken = false;
    for (const e of doc.errors) {
      broken = true;
      const at = map.at(e.pos[0]);
      if (e.code === "DUPLICATE_KEY") {
        diagnostics.push(err(at, "this key appears twice in the same mapping; keep one of them"));
      } else {
        diagnostics.push(err(at, `YAML syntax: ${firstLine(e.message)}; fix the YAML at this position`));
      }
    }
    for (const w of doc.warnings) {
      diagnostics.push({ severity: "warning", pos: map.at(w.pos[0]), message: `YAML: ${firstLine(w.message)}` });
    }
    if (broken) return;
    const contents = doc.contents;
    // Nothing, only comments, or an explicit null: an empty document.
    if (contents === null || (isScalar(contents) && contents.value === null)) return;
    docs.push({ file, doc, map, pos: map.at(contents.range?.[0] ?? 0), mayInterpolate });
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
        diagnostic: err(
          d.pos,
          `the document expands aliases more than ${MAX_ALIAS_COUNT} times, as an alias bomb does; write the values out instead of nesting aliases`,
        ),
      };
    }
    return { diagnostic: err(d.pos, `YAML: ${firstLine(message)}; fix the document`) };
  }
}
