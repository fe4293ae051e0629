/**
 * The fast read of a manifest text: its documents as plain values, from `js-yaml`'s event parser, about five times
 * cheaper than composing `yaml` documents with every node's place. It reads only the plain subset of YAML that both
 * libraries read alike, and declines everything else (`undefined`): a document that is not a mapping, anchors,
 * aliases, tags, directives (and any line that starts with `%`), explicit `?` keys, keys that are not text, tabs,
 * lone carriage returns, a flow collection closed at the start of a line, nesting past `MAX_NESTING`, any syntax
 * error. Plain scalars are resolved by `yaml`'s own core-schema tags, so a value reads the same as the full way
 * reads it. A declined text goes the full way (yaml-source.ts), which remains the one source of every YAML
 * diagnostic; test/manifest/yaml-fast.test.ts holds the two ways to the same documents. Pure.
 */
import { EVENT_ID, SCALAR_STYLE, getScalarValue, parseEvents, type Event } from "js-yaml";
import { LineCounter, Schema, isScalar, type Document, type ScalarTag } from "yaml";
import { InternalError } from "../model/errors.js";
import type { SourcePos } from "../model/state.js";
import { MAX_NESTING, SourceMap, parseManifestText, startOf, type ParsedDocument } from "./yaml-source.js";

/** One document of the fast read: its plain value and the offset where its content starts. */
export interface PlainDocument {
  value: unknown;
  start: number;
}

/** The core schema's tags that resolve plain scalars, in the order `yaml` tries them. */
const CORE_SCALAR_TAGS = new Schema({ schema: "core" }).tags.filter((t): t is ScalarTag => t.default === true && "test" in t && t.test !== undefined);
const RESOLVE_OPTIONS = { intAsBigInt: false } as const;

/** First characters of every text a core tag matches (the empty text is null): others stay text at once. */
const MAY_RESOLVE = /^[-+.0-9~nNtTfF]/;

/** Longest key source accepted: `yaml` refuses an implicit key of more than 1024 characters. */
const MAX_KEY_SPAN = 1000;

/** Text the fast read declines before parsing: where the two libraries are known to part, or `yaml` warns. */
const DECLINED_TEXT = /\t|\r(?!\n)|^%|^[ ]*[\]}]|(?:^|[\s[{,])\?(?:[ \r\n]|$)/m;

/** A plain scalar's value as `yaml`'s core schema resolves it (text that matches no tag stays text). */
function resolvePlain(text: string): unknown {
  if (text !== "" && !MAY_RESOLVE.test(text)) return text;
  for (const tag of CORE_SCALAR_TAGS) {
    if (!tag.test?.test(text)) continue;
    const resolved = tag.resolve(text, () => undefined, RESOLVE_OPTIONS);
    return isScalar(resolved) ? resolved.value : resolved;
  }
  return text;
}

/** What is being built: a document (its one node), a mapping (with the key waiting for its value), a sequence. */
type Frame =
  | { kind: "document"; value?: unknown; start: number }
  | { kind: "mapping"; value: Record<string, unknown>; key?: string }
  | { kind: "sequence"; value: unknown[] };

/** Thrown inside `construct` for anything outside the plain subset; never escapes `readPlainDocuments`. */
class Declined extends Error {}

const decline = (): never => {
  throw new Declined();
};

/**
 * A key as `yaml` writes it into a plain object (null as empty text). Declined: an empty key, a collection as a
 * key, a key over several lines or too long for an implicit key, `__proto__`, a key twice in one mapping.
 * `source`: the key's text as written, undefined when there is none (a collection, or nothing).
 */
function keyOf(value: unknown, source: string | undefined, mapping: Record<string, unknown>): string {
  if (source === undefined || (value !== null && typeof value === "object")) return decline();
  const key = value === null ? "" : String(value);
  if (source.length > MAX_KEY_SPAN || source.includes("\n") || key === "__proto__" || Object.hasOwn(mapping, key)) return decline();
  return key;
}

/** Adds a node to what is being built: a document's node, a mapping's key or value, a sequence's item. */
function attach(top: Frame | undefined, value: unknown, start: number, source: string | undefined): void {
  if (top === undefined) return decline();
  if (top.kind === "document") {
    // A manifest is a mapping; anything else but an empty document is for the full way to report.
    if (value !== null && (typeof value !== "object" || Array.isArray(value))) decline();
    top.value = value;
    top.start = start;
  } else if (top.kind === "sequence") {
    top.value.push(value);
  } else if (top.key === undefined) {
    top.key = keyOf(value, source, top.value);
  } else {
    top.value[top.key] = value;
    top.key = undefined;
  }
}

/** Builds the documents from the events; throws Declined for anything outside the plain subset. */
function construct(text: string, events: Event[]): PlainDocument[] {
  const docs: PlainDocument[] = [];
  const stack: Frame[] = [];
  for (const e of events) {
    if (e.type === EVENT_ID.DOCUMENT) {
      if (e.directives.length > 0) decline();
      stack.push({ kind: "document", start: 0 });
    } else if (e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE) {
      if (e.anchorStart >= 0 || e.tagStart >= 0) decline();
      const frame: Frame = e.type === EVENT_ID.MAPPING ? { kind: "mapping", value: {} } : { kind: "sequence", value: [] };
      attach(stack[stack.length - 1], frame.value, e.start, undefined);
      stack.push(frame);
    } else if (e.type === EVENT_ID.SCALAR) {
      if (e.anchorStart >= 0 || e.tagStart >= 0) decline();
      const source = e.valueStart < 0 ? undefined : text.slice(e.valueStart, e.valueEnd);
      const decoded = source === undefined ? "" : getScalarValue(text, e);
      attach(stack[stack.length - 1], e.style === SCALAR_STYLE.PLAIN ? resolvePlain(decoded) : decoded, e.valueStart, source);
    } else if (e.type === EVENT_ID.POP) {
      const frame = stack.pop();
      // A document's end: keep its node unless it is empty (nothing, or null).
      if (frame?.kind === "document" && frame.value !== undefined && frame.value !== null) docs.push({ value: frame.value, start: frame.start });
    } else {
      decline();
    }
  }
  return docs;
}

/**
 * The documents of a manifest text as plain values with where each starts, empty documents left out; undefined when
 * the text needs the full path (see the module's comment). Never throws.
 */
export function readPlainDocuments(text: string): PlainDocument[] | undefined {
  if (DECLINED_TEXT.test(text)) return undefined;
  try {
    return construct(text, parseEvents(text, { maxDepth: MAX_NESTING }));
  } catch {
    return undefined;
  }
}

/** A `---` at the start of a line: where a document starts (YAML allows it nowhere else at the start of a line). */
const DOCUMENT_MARKER = /^---(?=[ \r\n]|$)/gm;

/**
 * The nodes of the document of `text` that starts at offset `start`, with the map of their offsets: the document is
 * composed alone, from the `---` before it to the next one, and when that does not give exactly that document (it
 * always should), the whole text is composed and its `index`-th document taken. `markers`: where the text's `---`
 * lines start.
 */
function composeDocument(
  text: string,
  file: string,
  at: { lines: LineCounter; markers: readonly number[] },
  start: number,
  index: number,
): { doc: Document.Parsed; map: SourceMap } {
  const { lines, markers } = at;
  const from = markers.filter((m) => m <= start).pop() ?? 0;
  const to = markers.find((m) => m > start) ?? text.length;
  const [alone, more] = parseManifestText(text.slice(from, to), file).docs;
  if (alone !== undefined && more === undefined && startOf(alone.doc.contents ?? undefined) === start - from) {
    return { doc: alone.doc, map: new SourceMap(file, lines, from) };
  }
  const doc = parseManifestText(text, file).docs[index]?.doc;
  if (doc === undefined) throw new InternalError(`${file}: the full parse does not hold document ${index + 1} of the fast read`);
  return { doc, map: new SourceMap(file, lines) };
}

/**
 * The documents of a text that start at `starts` (as the fast read found them), each as a ParsedDocument whose YAML
 * nodes are composed only if a position inside it is asked for (`deferred`): that document is then parsed the full
 * way, alone.
 */
export function deferredDocuments(text: string, file: string, starts: readonly number[]): ParsedDocument[] {
  const lines = new LineCounter();
  lines.addNewLine(0);
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) lines.addNewLine(i + 1);
  const fileMap = new SourceMap(file, lines);
  const source: DeferredText = { text, file, lines, markers: undefined };
  return starts.map((start, k) => new DeferredDocument(source, fileMap.at(start), start, k));
}

/** What the deferred documents of one text share. */
interface DeferredText {
  text: string;
  file: string;
  lines: LineCounter;
  /** Where the text's `---` lines start: found when a first document is composed. */
  markers: number[] | undefined;
}

/**
 * A document of the fast read whose nodes are composed on first use. A loading keeps one per document, so it is a
 * small object: `doc` and `map` are getters of the class.
 */
class DeferredDocument implements ParsedDocument {
  readonly file: string;
  readonly mayInterpolate = false;
  readonly deferred = true;
  #nodes: { doc: Document.Parsed; map: SourceMap } | undefined;

  constructor(
    private readonly source: DeferredText,
    readonly pos: SourcePos,
    private readonly start: number,
    private readonly index: number,
  ) {
    this.file = source.file;
  }

  get doc(): Document.Parsed {
    return this.composed().doc;
  }

  get map(): SourceMap {
    return this.composed().map;
  }

  private composed(): { doc: Document.Parsed; map: SourceMap } {
    if (this.#nodes === undefined) {
      const s = this.source;
      s.markers ??= Array.from(s.text.matchAll(DOCUMENT_MARKER), (m) => m.index);
      this.#nodes = composeDocument(s.text, s.file, { lines: s.lines, markers: s.markers }, this.start, this.index);
    }
    return this.#nodes;
  }
}

/** The documents of a manifest text by the fast read, as deferred documents (`deferredDocuments`); undefined when it declines the text. */
export function fastDocuments(text: string, file: string): Array<{ src: ParsedDocument; value: unknown; start: number }> | undefined {
  const plain = readPlainDocuments(text);
  if (plain === undefined) return undefined;
  const srcs = deferredDocuments(text, file, plain.map((d) => d.start));
  return plain.map(({ value, start }, k) => ({ value, start, src: srcs[k] as ParsedDocument }));
}
