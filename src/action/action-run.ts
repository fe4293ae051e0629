/**
 * One run of the action once its inputs are read: what every part of src/action/ is handed. Kept apart from run.ts,
 * which drives a run, so that the parts it calls (the review, the posts) do not import their caller.
 */
import type { GitHubContext, PullRequestContext } from "./context.js";
import type { ActionInputs } from "./inputs.js";
import type { RedactFunction, Redactor } from "../model/redact.js";

/** The secrets of a run: masked in the log, redacted from everything the action writes itself. */
export interface Secrets {
  apiKey: string | undefined;
  /** Where the key is read when the api-key input is empty: EDGEPLAN_API_KEY, or the variable `api_key_env` names. */
  keyVariable: string;
  githubToken: string | undefined;
  /** The run's one redactor: it learns the manifests' header and query values while plan or apply reads them. */
  redactor: Redactor;
  redact: RedactFunction;
}

/** One run, once its inputs are read. */
export interface ActionRun {
  command: "plan" | "apply";
  stack: string;
  /** The project file's environment the run is in (the environment input, else EDGEPLAN_ENV, else the only one). */
  environment?: string;
  title: string;
  inputs: ActionInputs;
  ctx: GitHubContext;
  /** The pull request of a pull-request event. */
  pr: PullRequestContext | undefined;
  secrets: Secrets;
}
