/**
 * Step outputs (GITHUB_OUTPUT) and the job summary (GITHUB_STEP_SUMMARY): both are files the runner reads after
 * the step, appended to in the formats GitHub documents.
 */
import { appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { EdgeplanError } from "../model/errors.js";
import { cutMarkdown } from "./comment.js";

/** GitHub keeps at most 1 MiB of summary per step. */
export const SUMMARY_MAX_BYTES = 1024 * 1024;

/**
 * Outputs in the multi-line form `name<<DELIMITER\nvalue\nDELIMITER\n`, which carries any value (newlines too)
 * as long as the delimiter never occurs in it; the delimiter is random and checked.
 */
export function formatOutputs(outputs: Record<string, string>, delimiter: string = `ghadelimiter_${randomUUID()}`): string {
  let text = "";
  for (const [name, value] of Object.entries(outputs)) {
    if (name.includes(delimiter) || value.includes(delimiter)) {
      throw new EdgeplanError(`output ${name}: the value contains the output delimiter; this is a bug in edgeplan, please report it`);
    }
    text += `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
  }
  return text;
}

/** Appends the outputs to the GITHUB_OUTPUT file. */
export function writeOutputs(path: string, outputs: Record<string, string>): void {
  appendFileSync(path, formatOutputs(outputs), "utf8");
}

/** Cuts a summary to GitHub's per-step limit (in bytes), saying so at its end. */
export function fitSummary(markdown: string, maxBytes: number = SUMMARY_MAX_BYTES): string {
  let text = markdown;
  const note = "> [!NOTE]\n> The rest was cut: GitHub keeps at most 1 MiB of job summary per step. Run `edgeplan plan` locally for all of it.";
  for (let round = 0; round < 20 && Buffer.byteLength(text, "utf8") > maxBytes; round++) {
    const ratio = maxBytes / Buffer.byteLength(text, "utf8");
    text = cutMarkdown(markdown, Math.floor(Math.min(text.length, markdown.length) * ratio * 0.98), note);
  }
  return text;
}

/** Appends Markdown to the job summary file. */
export function writeSummary(path: string, markdown: string): void {
  appendFileSync(path, `${fitSummary(markdown).trimEnd()}\n\n`, "utf8");
}
