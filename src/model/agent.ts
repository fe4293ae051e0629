/**
 * The agent's vocabulary (docs/agent.md): its configuration once read and checked (src/agent/config.ts), and the
 * status it keeps per stack (src/agent/store.ts), which its API, its page (src/render/agent-page.ts), `agent status`
 * (src/render/agent-status.ts) and its notifications (src/agent/notify.ts) show. Pure types and constants.
 */

/** What a stack does with a plan that has changes. */
export const AGENT_MODES = ["correct", "warn", "detect"] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

/** What a notification may be sent for. */
export const AGENT_EVENTS = ["applied", "failed", "drift_detected", "drift_corrected", "waiting", "recovered"] as const;
export type AgentEvent = (typeof AGENT_EVENTS)[number];

/** A secret's place: a file or an environment variable, never the configuration's own text. */
export type SecretRef = { file: string } | { env: string };

/** A git repository the agent fetches. */
export interface AgentSource {
  name: string;
  /** `https://`, `ssh://`, `file://` or a local path (made absolute against the config file's folder). */
  url: string;
  /** A branch or a tag. */
  ref: string;
  intervalMs: number;
  /** Longest a fetch may take. */
  timeoutMs: number;
  /** For `https://`: the user name (default `git`) and the password or token. */
  username?: string;
  password?: SecretRef;
  /** For `ssh://`: the private key file, and the known-hosts file (host keys are always checked). */
  sshKeyFile?: string;
  knownHostsFile?: string;
  /** Only commits signed by a key of this allowed-signers file (SSH signatures) are reconciled. */
  allowedSignersFile?: string;
  /** The secret of `/hooks/NAME` (GitHub's `X-Hub-Signature-256`, or the same HMAC from any sender). */
  webhookSecret?: SecretRef;
  /** Where the pull request that merged a commit is read, for the acknowledgements written in it. */
  pullRequests?: PullRequestSource;
}

/** A GitHub repository whose merged pull requests may hold `/edgeplan ack` comments (as the Action reads them). */
export interface PullRequestSource {
  /** `owner/name`. */
  repository: string;
  /** GitHub's API, https:// (http:// only to a loopback host). */
  apiUrl: string;
  token: SecretRef;
  /** The login the Action comments as: its comments hold the record of the plan shown. */
  commentAuthor: string;
}

/** A stack the agent keeps converged. */
export interface AgentStack {
  name: string;
  source: string;
  /** Folder in the repository holding `edgeplan.yaml` or manifests (relative, never leaving the repository). */
  path: string;
  env?: string;
  apiUrl?: string;
  apiKey?: SecretRef;
  intervalMs: number;
  /** Wait after the first failure; doubled after each next one, up to `maxRetryIntervalMs`. */
  retryIntervalMs: number;
  maxRetryIntervalMs: number;
  mode: AgentMode;
  prune: boolean;
  suspend: boolean;
}

/** Where notifications go. */
export interface AgentNotification {
  name: string;
  type: "webhook" | "slack" | "github";
  /** The webhook's URL; for `github`, the API's base URL (default https://api.github.com). */
  url: string;
  /** `webhook`: signs the body (HMAC-SHA256, `X-Edgeplan-Signature-256: sha256=HEX`). `slack`: the URL itself may be secret. */
  secret?: SecretRef;
  /** `github`: the token, and the repository (`owner/name`) whose commits get a status. */
  token?: SecretRef;
  repository?: string;
  /** Events sent (default: all). */
  events: AgentEvent[];
  /** Stacks whose events are sent (default: all). */
  stacks?: string[];
}

export interface AgentConfig {
  /** The config file, as messages name it. */
  file: string;
  sources: AgentSource[];
  stacks: AgentStack[];
  notifications: AgentNotification[];
  /** Reconciliations kept per stack in the history. */
  historyLimit: number;
}

/** A commit as status and notifications show it. */
export interface Revision {
  sha: string;
  author: string;
  subject: string;
  /** The commit's time, ISO 8601. */
  at: string;
}

export type ConditionType = "Ready" | "Reconciling" | "Stalled";

/** One condition of a stack, as Flux's kstatus has them. */
export interface Condition {
  type: ConditionType;
  status: "True" | "False" | "Unknown";
  /** One CamelCase word: `ReconciliationSucceeded`, `DriftDetected`, `WaitingForPerson`, `ManifestError`, ... */
  reason: string;
  message: string;
  /** When the status last changed, ISO 8601. */
  since: string;
}

/** One object that differs from the manifests (mode warn or detect, or before a correction). */
export interface DriftEntry {
  address: string;
  /** The plan's action: create, update, delete, ... */
  action: string;
  /** What differs, one line. */
  detail: string;
}

/** What waits for a person before the stack's plan may be applied. */
export interface WaitingEntry {
  /** The policy or risk rule. */
  rule: string;
  level: "ack" | "deny";
  message: string;
  /** The digest of the plan an acknowledgement must name. */
  digest: string;
  /** How to acknowledge it (empty for a deny: only a manifest change can lift it). */
  command: string;
}

/** A rollout under way on the stack. */
export interface RolloutEntry {
  address: string;
  /** One line: step, weights, what it waits for. */
  summary: string;
}

/** What the agent knows of one stack. */
export interface StackStatus {
  name: string;
  source: string;
  mode: AgentMode;
  suspended: boolean;
  conditions: Condition[];
  last_applied_revision: Revision | null;
  last_attempted_revision: Revision | null;
  drift: DriftEntry[];
  /** Since when the live side has differed from the manifests (null when it does not). */
  drift_since: string | null;
  waiting: WaitingEntry[];
  rollouts: RolloutEntry[];
  last_reconciled_at: string | null;
  /** Failures in a row (the retry backoff's exponent). */
  failures: number;
}

/** What a reconciliation came to. */
export const RECONCILE_RESULTS = ["applied", "in_sync", "drift", "waiting", "failed", "stalled"] as const;
export type ReconcileResult = (typeof RECONCILE_RESULTS)[number];

/** Why a reconciliation ran. */
export type ReconcileTrigger = "start" | "interval" | "commit" | "manual" | "webhook" | "retry" | "rollout";

/** One reconciliation of a stack, as the history keeps it. */
export interface HistoryEntry {
  /** Increasing per store. */
  seq: number;
  stack: string;
  started_at: string;
  finished_at: string;
  trigger: ReconcileTrigger;
  revision: Revision | null;
  result: ReconcileResult;
  /** One line: what happened. */
  message: string;
  /** The plan's digest, when a plan was made. */
  digest: string | null;
  /** The plan as text (today's text renderer, no colour, secrets redacted), when a plan was made. */
  plan_text: string | null;
  /** What the apply reported, when it ran. */
  report: string | null;
}

/** A person's acknowledgement of a rule for one plan of a stack. */
export interface AckRecord {
  stack: string;
  rule: string;
  digest: string;
  by: string;
  at: string;
}
