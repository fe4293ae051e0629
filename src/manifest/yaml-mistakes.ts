/**
 * Common YAML mistakes behind the `yaml` package's first error of a document. The package reports what its parser
 * met (an under-indented list item gives three errors about implicit keys); a person needs the mistake, where it
 * is, and what to do, once. Pure: the error and the text in, an explanation out.
 */
import type { YAMLError } from "yaml";

/** A mistake: where to point, what to say, and which of the package's errors are its consequences. */
export interface YamlMistake {
  offset: number;
  message: string;
  explains: (e: YAMLError) => boolean;
}

const lineStart = (text: string, offset: number): number => text.lastIndexOf("\n", offset - 1) + 1;
const lineEnd = (text: string, offset: number): number => {
  const end = text.indexOf("\n", offset);
  return end < 0 ? text.length : end;
};
/** Errors that start within [from, to]: the rest of what one mistake made the parser trip over. */
const within = (from: number, to: number) => (e: YAMLError) => e.pos[0] >= from && e.pos[0] <= to;

/** The mistake behind `first`, the first error of a document, when it is one of the common ones. */
export function explainYamlError(first: YAMLError, text: string): YamlMistake | undefined {
  if (first.code === "BLOCK_AS_IMPLICIT_KEY") return underIndentedItem(first, text);
  if (first.code === "TAB_AS_INDENT") {
    const message = "a tab indents this line, and YAML indents with spaces only; replace the tab with spaces";
    return { offset: first.pos[0], message, explains: (e) => e === first };
  }
  if (first.code === "MISSING_CHAR" && first.message.startsWith("Missing closing")) return unclosedQuote(first, text);
  if (first.code === "MULTILINE_IMPLICIT_KEY" || first.code === "MISSING_CHAR") return colonWithoutSpace(first, text);
  return undefined;
}

/**
 * `- item` indented less than the items of the list above it: YAML reads it as a list in the enclosing mapping,
 * where a list cannot be. The list it was meant to join is the least indented one above it that is indented more.
 */
function underIndentedItem(first: YAMLError, text: string): YamlMistake | undefined {
  const start = lineStart(text, first.pos[0]);
  const indent = /^( *)-(?: |$)/m.exec(text.slice(start, lineEnd(text, start)))?.[1]?.length;
  if (indent === undefined) return undefined;
  let items: number | undefined;
  for (const line of text.slice(0, start).split("\n").reverse()) {
    const m = /^( *)(\S)/.exec(line);
    if (!m || m[2] === "#") continue;
    const at = m[1]?.length ?? 0;
    if (at <= indent) break;
    if (/^ *-(?: |$)/.test(line)) items = Math.min(items ?? at, at);
  }
  const message =
    items === undefined
      ? "this list item is indented less than the entries of the key above it, so YAML cannot tell where it belongs; indent it like them"
      : `this list item is indented ${indent} spaces, less than the items of the list above it (${items}), so YAML cannot tell where it belongs; indent it by ${items - indent} more spaces`;
  return { offset: start + indent, message, explains: within(start, lineEnd(text, start)) };
}

/** `key:value`: without a space after it, the colon does not end a key, and YAML reads the line as a key with no value. */
function colonWithoutSpace(first: YAMLError, text: string): YamlMistake | undefined {
  const start = lineStart(text, first.pos[0]);
  if (!/^ *(?:- +)?$/.test(text.slice(start, first.pos[0]))) return undefined;
  const key = /^[^\s:#'"{}[\],]+(?=:[^\s])/.exec(text.slice(first.pos[0], lineEnd(text, first.pos[0])));
  if (!key) return undefined;
  const message = "no space follows this colon, so YAML does not read a key and a value here; put a space after the colon";
  return { offset: first.pos[0] + key[0].length, message, explains: within(start, Math.max(first.pos[1], lineEnd(text, start))) };
}

/**
 * A quote opened and not closed: YAML reads on to the end of the file and says so there. The mistake is at the first
 * value that opens a quote its line does not close (manifests write quoted text on one line).
 */
function unclosedQuote(first: YAMLError, text: string): YamlMistake | undefined {
  const value = /^( *(?:- +)?(?:[^\s#'"][^#\n]*?: +)?)(["'])(.*)$/gm;
  for (let m = value.exec(text); m !== null && m.index < first.pos[0]; m = value.exec(text)) {
    const [, before = "", quote = "", rest = ""] = m;
    const closed = quote === '"' ? /(?:^|[^\\])(?:\\\\)*"/.test(rest) : /'/.test(rest.replace(/''/g, ""));
    if (closed) continue;
    const offset = m.index + before.length;
    const message = `this quoted text has no closing ${quote} on its line, so YAML reads on to the end of the file; close the quote`;
    return { offset, message, explains: (e) => e.pos[0] >= offset };
  }
  return undefined;
}
