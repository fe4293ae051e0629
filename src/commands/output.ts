/**
 * What the commands write: a plan in the chosen format, files written whole or not at all, and the HTML page of
 * `--html FILE`. Shared by `plan`, `apply`, `show`, `export`, `fmt` and `init`, none of which needs the others.
 */
import { rename, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Plan } from "../model/plan.js";
import { renderHtml, type HtmlPlanPlace } from "../render/html.js";
import { renderJson } from "../render/json.js";
import { renderMarkdown } from "../render/markdown.js";
import { renderText } from "../render/text.js";
import type { CommandIO } from "./io.js";

export type PlanFormat = "text" | "json" | "markdown" | "html";
export const PLAN_FORMATS: readonly PlanFormat[] = ["text", "json", "markdown", "html"];

/** Whether text output may carry ANSI colours: a terminal, no NO_COLOR, no --no-color. */
export function useColor(options: { color?: boolean }, io: CommandIO): boolean {
  return options.color !== false && io.stdoutIsTTY && !io.env.NO_COLOR;
}

/**
 * Renders the plan in the chosen format; an HTML page's header shows `place`, where and when it was made. `where`
 * (the run's flags that reach the same API and stack) completes the commands the notes quote; JSON stays the data.
 */
export function renderPlan(plan: Plan, format: PlanFormat, color: boolean, where = "", place?: HtmlPlanPlace): string {
  if (format === "json") return renderJson(plan);
  if (format === "markdown") return renderMarkdown(plan, { where });
  if (format === "html") return renderHtml(plan, place, where);
  return renderText(plan, { color, where });
}

/**
 * Writes a file so that a reader never sees it half-written: a temporary file beside it (with `mode`), then a
 * rename over the file.
 */
export async function writeFileAtomic(path: string, text: string, mode = 0o644): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text, { mode });
  await rename(tmp, path);
}

/** Writes an HTML page to `--html FILE` (atomically) and says so on stderr. */
export async function writeHtmlFile(io: CommandIO, file: string, page: string, what: string): Promise<void> {
  await writeFileAtomic(resolve(io.cwd, file), page);
  io.stderr(`${what} written to ${file} (HTML; open it in a browser)\n`);
}
