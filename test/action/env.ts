/**
 * A GitHub Actions runner's surroundings in a temporary folder: the event payload, the outputs and summary files,
 * RUNNER_TEMP, and the INPUT_ variables action.yml would set.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inputEnvName } from "../../src/action/inputs.js";

export interface RunnerFiles {
  dir: string;
  workspace: string;
  env: Record<string, string>;
  outputs(): Record<string, string>;
  summary(): string;
}

export interface RunnerOptions {
  event: "pull_request" | "push" | "schedule" | "issue_comment";
  inputs: Record<string, string>;
  githubApiUrl: string;
  pr?: { number: number; headSha: string; fork?: boolean };
  ref?: string;
  /** GITHUB_SHA: the commit of the run (on a push, the merge commit). */
  sha?: string;
  /** On issue_comment: the pull request commented on. */
  commentOn?: number;
  /** An existing checkout to use as the workspace (default: an empty folder). */
  workspace?: string;
  extraEnv?: Record<string, string>;
  /** The job summary file (default: `summary` in the runner's folder). */
  summaryFile?: string;
}

export function runnerEnv(options: RunnerOptions): RunnerFiles {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-runner-"));
  const workspace = options.workspace ?? join(dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(join(dir, "temp"));
  const payload: Record<string, unknown> = { repository: { full_name: "acme/routes", default_branch: "main" } };
  if (options.pr) {
    payload.pull_request = {
      number: options.pr.number,
      head: { sha: options.pr.headSha, repo: { full_name: options.pr.fork ? "stranger/routes" : "acme/routes" } },
      base: { repo: { full_name: "acme/routes" } },
    };
  }
  if (options.ref) payload.ref = options.ref;
  if (options.commentOn !== undefined) payload.issue = { number: options.commentOn, pull_request: { url: "https://api.github.com/pulls" } };
  writeFileSync(join(dir, "event.json"), JSON.stringify(payload));
  writeFileSync(join(dir, "output"), "");
  const summaryFile = options.summaryFile ?? join(dir, "summary");
  if (!existsSync(summaryFile)) writeFileSync(summaryFile, "");
  const env: Record<string, string> = {
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: options.event,
    GITHUB_EVENT_PATH: join(dir, "event.json"),
    GITHUB_REPOSITORY: "acme/routes",
    GITHUB_API_URL: options.githubApiUrl,
    GITHUB_SERVER_URL: "https://github.com",
    GITHUB_RUN_ID: "4242",
    GITHUB_WORKSPACE: workspace,
    GITHUB_OUTPUT: join(dir, "output"),
    GITHUB_STEP_SUMMARY: summaryFile,
    RUNNER_TEMP: join(dir, "temp"),
    ...(options.ref ? { GITHUB_REF: options.ref } : {}),
    ...(options.sha ? { GITHUB_SHA: options.sha } : {}),
    ...options.extraEnv,
  };
  for (const [name, value] of Object.entries(options.inputs)) env[inputEnvName(name)] = value;
  return {
    dir,
    workspace,
    env,
    outputs: () => parseOutputs(readFileSync(join(dir, "output"), "utf8")),
    summary: () => (existsSync(summaryFile) ? readFileSync(summaryFile, "utf8") : ""),
  };
}

/** Reads a GITHUB_OUTPUT file the way the runner does (both `name=value` and `name<<DELIM` forms). */
export function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line) continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const value: string[] = [];
      let j = i + 1;
      while (j < lines.length && lines[j] !== heredoc[2]) value.push(lines[j++]!);
      if (j >= lines.length) throw new Error(`output ${heredoc[1]}: delimiter ${heredoc[2]} never closes`);
      out[heredoc[1]!] = value.join("\n");
      i = j;
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new Error(`malformed output line: ${line}`);
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}
