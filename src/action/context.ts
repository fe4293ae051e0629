/**
 * The GitHub context the action needs, read from the variables the runner sets and from the event payload file
 * (GITHUB_EVENT_PATH). Only the fields used here are read; a missing one is undefined, never a guess.
 */
import { readFileSync } from "node:fs";
import { EdgeplanError } from "../model/errors.js";

export interface PullRequestContext {
  number: number;
  /** The commit the plan was made for. */
  headSha?: string;
  headRepo?: string;
  baseRepo?: string;
  /** The head lives in another repository: the workflow's token is read-only and secrets are withheld. */
  isFork: boolean;
}

export interface GitHubContext {
  eventName: string;
  /** `owner/name` of the repository the workflow runs in. */
  repository?: { owner: string; repo: string };
  /** REST base, e.g. `https://api.github.com` or `https://ghe.example.com/api/v3`, without a trailing slash. */
  apiUrl: string;
  /** Link to this run, for "the full plan is in the job summary". */
  runUrl?: string;
  pullRequest?: PullRequestContext;
  /** `refs/heads/main` on a push. */
  ref?: string;
  /** The commit the run is for (GITHUB_SHA): on a push to the default branch, the merge commit. */
  sha?: string;
  /** On a comment (`issue_comment`) of a pull request: its number. */
  commentedPullRequest?: number;
  defaultBranch?: string;
  /** The repository checkout: annotation paths are made relative to it. */
  workspace: string;
  outputPath?: string;
  summaryPath?: string;
  /** Where the saved plan goes (RUNNER_TEMP on GitHub). */
  tempDir?: string;
}

const PULL_REQUEST_EVENTS = new Set(["pull_request", "pull_request_target"]);

/** True for the events that carry a pull request the action comments on. */
export function isPullRequestEvent(eventName: string): boolean {
  return PULL_REQUEST_EVENTS.has(eventName);
}

/**
 * Builds the context from the environment.
 * @throws EdgeplanError when GITHUB_EVENT_PATH names a file that cannot be read or is not JSON.
 */
export function loadGitHubContext(
  env: Record<string, string | undefined>,
  cwd: string,
  readFile: (path: string) => string = (path) => readFileSync(path, "utf8"),
): GitHubContext {
  const nonEmpty = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  const ctx: GitHubContext = {
    eventName: env.GITHUB_EVENT_NAME ?? "",
    apiUrl: (env.GITHUB_API_URL || "https://api.github.com").replace(/\/+$/, ""),
    workspace: nonEmpty("GITHUB_WORKSPACE") ?? cwd,
  };
  const outputPath = nonEmpty("GITHUB_OUTPUT");
  if (outputPath) ctx.outputPath = outputPath;
  const summaryPath = nonEmpty("GITHUB_STEP_SUMMARY");
  if (summaryPath) ctx.summaryPath = summaryPath;
  const tempDir = nonEmpty("RUNNER_TEMP");
  if (tempDir) ctx.tempDir = tempDir;
  const ref = nonEmpty("GITHUB_REF");
  if (ref) ctx.ref = ref;
  const sha = nonEmpty("GITHUB_SHA");
  if (sha) ctx.sha = sha;

  const repository = nonEmpty("GITHUB_REPOSITORY");
  const slash = repository?.indexOf("/") ?? -1;
  if (repository && slash > 0) {
    ctx.repository = { owner: repository.slice(0, slash), repo: repository.slice(slash + 1) };
    const serverUrl = (env.GITHUB_SERVER_URL || "https://github.com").replace(/\/+$/, "");
    const runId = nonEmpty("GITHUB_RUN_ID");
    if (runId) ctx.runUrl = `${serverUrl}/${repository}/actions/runs/${runId}`;
  }

  const eventPath = nonEmpty("GITHUB_EVENT_PATH");
  if (eventPath) {
    let event: unknown;
    try {
      event = JSON.parse(readFile(eventPath));
    } catch (err) {
      throw new EdgeplanError(`GITHUB_EVENT_PATH ${eventPath}: the event payload cannot be read as JSON (${(err as Error).message})`, {
        cause: err,
      });
    }
    applyEvent(ctx, event);
  }
  return ctx;
}

function applyEvent(ctx: GitHubContext, event: unknown): void {
  const defaultBranch = str(get(event, "repository", "default_branch"));
  if (defaultBranch) ctx.defaultBranch = defaultBranch;
  const ref = str(get(event, "ref"));
  if (ref && !ctx.ref) ctx.ref = ref;
  // A comment on a pull request is an issue comment whose issue carries a `pull_request` object.
  const issueNumber = get(event, "issue", "number");
  if (get(event, "issue", "pull_request") !== undefined && typeof issueNumber === "number" && Number.isInteger(issueNumber) && issueNumber > 0) {
    ctx.commentedPullRequest = issueNumber;
  }
  const pr = get(event, "pull_request");
  const number = get(pr, "number") ?? get(event, "number");
  if (pr !== undefined && typeof number === "number" && Number.isInteger(number) && number > 0) {
    const headRepo = str(get(pr, "head", "repo", "full_name"));
    const baseRepo = str(get(pr, "base", "repo", "full_name"));
    const pullRequest: PullRequestContext = {
      number,
      // A deleted fork has no head repo at all: it is still a fork.
      isFork: baseRepo !== undefined && headRepo !== baseRepo,
    };
    const headSha = str(get(pr, "head", "sha"));
    if (headSha) pullRequest.headSha = headSha;
    if (headRepo) pullRequest.headRepo = headRepo;
    if (baseRepo) pullRequest.baseRepo = baseRepo;
    ctx.pullRequest = pullRequest;
  }
}

function get(value: unknown, ...keys: string[]): unknown {
  let cur = value;
  for (const key of keys) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The command to run when the `command` input is left out: `apply` on a push to the default branch (the merge of
 * a reviewed pull request), `plan` everywhere else, so that a push to a feature branch never changes live state.
 */
export function resolveCommand(explicit: "plan" | "apply" | undefined, ctx: GitHubContext): "plan" | "apply" {
  if (explicit) return explicit;
  if (ctx.eventName === "push") {
    // Without a payload that names the default branch, a push is trusted to be one the workflow filtered itself.
    if (!ctx.defaultBranch || !ctx.ref) return "apply";
    return ctx.ref === `refs/heads/${ctx.defaultBranch}` ? "apply" : "plan";
  }
  return "plan";
}
