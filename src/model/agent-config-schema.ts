/**
 * The zod schema of the agent's configuration file (docs/agent.md, "Configuration"): shapes and types; durations,
 * URLs and cross references are checked by src/agent/config.ts, which turns the file into an AgentConfig. The JSON
 * Schema in schemas/agent.schema.json is generated from it. No secret is ever one of its values: each is a file or
 * an environment variable. Pure.
 */
import { z } from "zod";
import { AGENT_EVENTS, AGENT_MODES } from "./agent.js";

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const REPOSITORY = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;
const name = (what: string) =>
  z
    .string()
    .regex(NAME, `${what}: lower-case letters, digits and dashes (at most 63)`)
    .meta({ description: `The ${what}'s name, unique.` });
const duration = (description: string) => z.string().meta({ description: `${description} A duration: 30s, 5m, 1h.` });
const file = (description: string) =>
  z
    .string()
    .min(1)
    .meta({ description: `${description} A file path (relative to the configuration's folder).` });
const envVar = (description: string) =>
  z
    .string()
    .regex(ENV_NAME, "an environment variable's name")
    .meta({ description: `${description} The name of an environment variable of the agent.` });

const SourceSchema = z.strictObject({
  name: name("source"),
  url: z.string().min(1).meta({ description: "The repository: https://, ssh://, file:// or a path." }),
  ref: z.string().min(1).optional().meta({ description: "The branch or tag to reconcile. Default: main." }),
  interval: duration("How often it is fetched. Default: 1m.").optional(),
  timeout: duration("Longest a fetch may take. Default: 60s.").optional(),
  username: z.string().min(1).optional().meta({ description: "https only: the user name (default git)." }),
  password_file: file("https only: the password or token.").optional(),
  password_env: envVar("https only: the password or token.").optional(),
  ssh_key_file: file("ssh only: the private key.").optional(),
  known_hosts_file: file("ssh only: the known hosts (host keys are always checked).").optional(),
  verify: z
    .strictObject({ allowed_signers_file: file("Only commits signed (SSH) by a key of this allowed-signers file are reconciled.") })
    .optional()
    .meta({ description: "Commit verification." }),
  webhook: z
    .strictObject({ secret_file: file("The secret of /hooks/NAME.").optional(), secret_env: envVar("The secret of /hooks/NAME.").optional() })
    .optional()
    .meta({ description: "The webhook that fetches at once (GitHub's X-Hub-Signature-256, or the same HMAC)." }),
  pull_requests: z
    .strictObject({
      repository: z.string().regex(REPOSITORY, "owner/name").meta({ description: "The GitHub repository of the source." }),
      api_url: z.string().optional().meta({ description: "GitHub's API. Default: https://api.github.com." }),
      token_file: file("A token that reads pull requests, their comments and collaborators' permissions.").optional(),
      token_env: envVar("A token that reads pull requests, their comments and collaborators' permissions.").optional(),
      comment_author: z.string().min(1).optional().meta({ description: "The login the Action comments as. Default: github-actions[bot]." }),
    })
    .optional()
    .meta({ description: "Acknowledgements written in the pull request that merged a commit (/edgeplan ack) count, as the Action reads them." }),
});

const StackSchema = z.strictObject({
  name: z.string().min(1).max(200).meta({ description: "The stack name the plans use (as --stack), unique." }),
  source: z.string().meta({ description: "The source it is reconciled from." }),
  path: z.string().optional().meta({ description: "Its folder in the repository (edgeplan.yaml or manifests). Default: ." }),
  env: z.string().optional().meta({ description: "The environment of that edgeplan.yaml." }),
  api_url: z.string().optional().meta({ description: "The API; the key is sent only there. Default: the environment's api_url." }),
  api_key_file: file("The API key.").optional(),
  api_key_env: envVar("The API key (default EDGEPLAN_API_KEY).").optional(),
  interval: duration("How often it is reconciled, even without a new commit. Default: 5m.").optional(),
  retry_interval: duration("Wait after a failure, doubled after each next one. Default: 30s.").optional(),
  max_retry_interval: duration("Longest wait after failures. Default: 10m.").optional(),
  mode: z.enum(AGENT_MODES).optional().meta({ description: "correct applies; warn plans and alerts; detect only records. Default: correct." }),
  prune: z.boolean().optional().meta({ description: "Delete objects of the stack that no manifest declares. Default: false." }),
  suspend: z.boolean().optional().meta({ description: "Leave the stack alone. Default: false." }),
});

const NotificationSchema = z.strictObject({
  name: name("notification"),
  type: z.enum(["webhook", "slack", "github"]).meta({ description: "webhook (JSON), slack (incoming webhook) or github (commit status)." }),
  url: z.string().optional().meta({ description: "The webhook's URL; github: the API's base (default https://api.github.com)." }),
  url_file: file("slack: the webhook URL (a secret).").optional(),
  url_env: envVar("slack: the webhook URL (a secret).").optional(),
  secret_file: file("webhook: the HMAC-SHA256 secret of X-Edgeplan-Signature-256.").optional(),
  secret_env: envVar("webhook: the HMAC-SHA256 secret of X-Edgeplan-Signature-256.").optional(),
  token_file: file("github: the token.").optional(),
  token_env: envVar("github: the token.").optional(),
  repository: z.string().regex(REPOSITORY, "owner/name").optional().meta({ description: "github: the repository whose commits get a status." }),
  events: z.array(z.enum(AGENT_EVENTS)).optional().meta({ description: "The events sent. Default: all." }),
  stacks: z.array(z.string()).optional().meta({ description: "The stacks whose events are sent. Default: all." }),
});

export const AgentConfigSchema = z
  .strictObject({
    sources: z.array(SourceSchema).min(1, "name at least one source (a git repository to fetch)").meta({ description: "The git repositories the agent fetches." }),
    stacks: z.array(StackSchema).min(1, "name at least one stack (a folder of a source to reconcile)").meta({ description: "The stacks it keeps converged." }),
    notifications: z.array(NotificationSchema).optional().meta({ description: "Where it says what happened." }),
    history: z.number().int().min(1).max(1000).optional().meta({ description: "Reconciliations kept per stack. Default: 20." }),
  })
  .meta({ title: "edgeplan agent configuration" });
export type AgentConfigFile = z.infer<typeof AgentConfigSchema>;
