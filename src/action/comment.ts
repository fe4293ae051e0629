/**
 * The pull-request comment and job-summary texts: the hidden marker that finds the sticky comment again, and
 * Markdown cut to a size limit without leaving a code fence or a `<details>` block open. Pure.
 */

/** GitHub refuses comment bodies longer than this many characters. */
export const COMMENT_MAX_CHARS = 65_536;

/**
 * The hidden first line of the sticky comment. It names the stack, so that two stacks planned in one repository
 * keep one comment each.
 */
export function commentMarker(stack: string): string {
  // `--` cannot appear inside an HTML comment; stacks are plain names, but a stray one must not end the marker.
  return `<!-- edgeplan:plan stack=${stack.replace(/--+/g, "-").replace(/>/g, "")} -->`;
}

/** True when `body` is the sticky comment of `marker` (the marker is its first line, not a quote of it). */
export function isStickyComment(body: string | null | undefined, marker: string): boolean {
  return typeof body === "string" && body.trimStart().startsWith(marker);
}

/**
 * Cuts `markdown` to at most `max` characters at a line boundary, closes a code fence or `<details>` blocks the cut
 * left open, and ends with `note` (which says where the rest is). Text within the limit is returned unchanged.
 */
export function cutMarkdown(markdown: string, max: number, note: string): string {
  if (markdown.length <= max) return markdown;
  const tail = `\n\n${note}\n`;
  let budget = max - tail.length;
  // Closing what the cut left open takes room too: shrink until the closed text fits (a few rounds at most).
  for (let round = 0; round < 8 && budget > 0; round++) {
    let cut = markdown.slice(0, budget);
    const lastNewline = cut.lastIndexOf("\n");
    if (lastNewline > 0) cut = cut.slice(0, lastNewline);
    const closed = cut + closers(cut);
    if (closed.length + tail.length <= max) return closed + tail;
    budget -= closed.length + tail.length - max + 1;
  }
  return tail.trimStart().slice(0, max);
}

/** The text that closes a fence and `<details>` blocks left open at the end of `text`. */
function closers(text: string): string {
  let fence: string | undefined;
  let openDetails = 0;
  for (const line of text.split("\n")) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (m?.[1]) {
      const marker = m[1];
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    openDetails += (line.match(/<details[\s>]/gi) ?? []).length;
    openDetails -= (line.match(/<\/details>/gi) ?? []).length;
  }
  let out = fence !== undefined ? `\n${fence}` : "";
  for (let i = 0; i < Math.max(0, openDetails); i++) out += "\n\n</details>";
  return out;
}

export interface CommentParts {
  marker: string;
  /** One heading line, without `#`; left out when the Markdown starts with a heading of its own. */
  title: string;
  /** The plan (or the failure) as Markdown. */
  markdown: string;
  /** One short line under the plan: commit, link to the run. */
  footer?: string;
  /** Link to the run, where the full plan is when the comment had to be cut. */
  runUrl?: string;
  max?: number;
}

/**
 * The body of the sticky comment: marker, heading, plan, footer; the plan is cut so that the whole body stays
 * within GitHub's limit, with a line that points at the job summary, which always holds the full plan.
 */
export function buildCommentBody(parts: CommentParts): string {
  const max = parts.max ?? COMMENT_MAX_CHARS;
  const head = `${parts.marker}\n${startsWithHeading(parts.markdown) ? "" : `### ${parts.title}\n\n`}`;
  const foot = parts.footer ? `\n\n<sub>${parts.footer}</sub>\n` : "\n";
  const where = parts.runUrl ? `the job summary of [this run](${parts.runUrl})` : "the job summary of this run";
  const note = `> [!NOTE]\n> The plan was cut to fit in a comment; the full plan is in ${where}.`;
  const room = max - head.length - foot.length;
  return head + cutMarkdown(parts.markdown.trimEnd(), room, note).trimEnd() + foot;
}

/** True when the first line of `markdown` is an ATX heading (`# ...` to `###### ...`). */
export function startsWithHeading(markdown: string): boolean {
  return /^#{1,6}\s/.test(markdown.trimStart());
}
