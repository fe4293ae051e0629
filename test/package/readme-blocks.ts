/**
 * The fenced blocks of a Markdown file, with the `<!-- test: ... -->` comment that may stand on the line before
 * each: `skip (reason)` (a block that needs a network, an account or a GitHub runner), `background` (a command that
 * runs until stopped, such as a server) or `file PATH` (a file the reader is told to save).
 */
export interface FencedBlock {
  /** The info string's language: `sh`, `console`, `yaml`, ... (empty when none). */
  lang: string;
  body: string;
  /** The text of the `<!-- test: ... -->` comment before the fence, if any. */
  marker: string | undefined;
  /** 1-based line of the opening fence. */
  line: number;
}

const MARKER = /^<!-- test: (.+?) -->$/;

/** Every fenced block of `markdown`, in order. An unclosed fence is an error naming its line. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const lines = markdown.split("\n");
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (open === null) continue;
    const end = lines.findIndex((l, j) => j > i && l === "```");
    if (end < 0) throw new Error(`line ${i + 1}: the fence opened here is never closed`);
    const before = i > 0 ? MARKER.exec(lines[i - 1]!) : null;
    blocks.push({ lang: open[1]!, body: lines.slice(i + 1, end).join("\n"), marker: before?.[1], line: i + 1 });
    i = end;
  }
  return blocks;
}

/** A command of a `console` block (`$ ` lines) and the output lines shown under it (`...` stands for lines left out). */
export interface ConsoleStep {
  command: string;
  shown: string[];
}

/** The commands of a `console` block, each with the lines shown after it. */
export function consoleSteps(body: string): ConsoleStep[] {
  const steps: ConsoleStep[] = [];
  for (const line of body.split("\n")) {
    if (line.startsWith("$ ")) steps.push({ command: line.slice(2), shown: [] });
    else if (steps.length === 0) throw new Error(`console block: output before any command: ${line}`);
    else steps.at(-1)!.shown.push(line);
  }
  return steps;
}

/** The languages whose blocks are commands to run. */
export const SHELL_LANGS = new Set(["sh", "bash", "console"]);
