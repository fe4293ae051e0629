/**
 * The zod schema of the project file, `edgeplan.yaml`: the settings a team would otherwise repeat on every command
 * line (docs/manifests.md, "The project file"). It checks shapes and types; the values are then parsed by the same
 * parsers as the flags (src/model/syntax.ts), so a file and a flag accept and refuse the same strings. The JSON
 * Schema in schemas/ is generated from it. The API key is never one of its keys. Pure.
 */
import { z } from "zod";

/** The file read from the working directory when `--config` is not given. */
export const PROJECT_FILE = "edgeplan.yaml";

const text = (description: string) => z.string().meta({ description });

/** One policy (docs/policies.md): a CEL expression that must hold for each change it matches, or once for the plan. */
export const PolicySchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,62}$/, "a policy's name is lower-case letters, digits and dashes, starting with a letter (at most 63 characters)")
      .meta({ description: "The policy's name: what results show and what --ack names for level ack." }),
    description: z.string().min(1).meta({ description: "What must hold, as a sentence: the message of each violation." }),
    level: z.enum(["warn", "ack", "deny"]).meta({ description: "warn: shown; ack: a risk that apply needs --ack NAME for; deny: the plan fails and apply refuses." }),
    match: z
      .strictObject({
        kinds: z
          .array(z.enum(["weighted_backend", "saml", "circuit_breaker"]))
          .optional()
          .meta({ description: "Kinds of change judged. Default: every kind." }),
        actions: z
          .array(z.enum(["create", "update", "delete", "adopt", "takeover", "rename", "rollout", "replace"]))
          .optional()
          .meta({ description: "Actions judged (a module's writes are replace or delete). Default: every action." }),
        environments: z.array(z.string()).optional().meta({ description: "Environments judged; never matches a plan without an environment. Default: every plan." }),
        scope: z
          .enum(["change", "plan"])
          .optional()
          .meta({ description: "change (default): evaluated for each matching change, with `change`; plan: evaluated once per plan, without `change`." }),
      })
      .optional()
      .meta({ description: "Which changes the policy judges; each list is optional." }),
    expression: z.string().min(1).meta({ description: "CEL over `change`, `plan` and `env` that must be true; false is a violation." }),
  })
  .meta({ description: "A policy over plans (docs/policies.md)." });
export type PolicyDeclaration = z.infer<typeof PolicySchema>;

/** A file that `policy_files` names: a mapping with one key, `policies`. */
export const PolicyFileSchema = z.strictObject({ policies: z.array(PolicySchema) }).meta({ title: "edgeplan policy file" });
const numberOrText = (description: string) => z.union([z.number(), z.string()]).meta({ description });

/** An environment's name: it goes into plan headers, comment markers and lease records. */
export const ENVIRONMENT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
/** A variable's name, `${var.NAME}`. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The settings both the top level and an environment may set. */
const SETTINGS = {
  paths: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .meta({
      description: "Manifest files or folders, relative to this file and inside its folder (not in .git/), used when a command names none. Default: the working directory.",
    }),
  stack: text("Stack name kept in owner markers (--stack, EDGEPLAN_STACK). Default: default.").optional(),
  api_url: text("API base URL (--api-url, EDGEPLAN_API_URL).").optional(),
  api_key_env: z
    .string()
    .regex(ENV_VAR_NAME, "expected the name of an environment variable (letters, digits and _), e.g. EDGEPLAN_API_KEY_PROD")
    .optional()
    .meta({ description: "The environment variable that holds the API key, e.g. EDGEPLAN_API_KEY_PROD (--api-key-file wins). Default: EDGEPLAN_API_KEY." }),
  concurrency: numberOrText("Requests in flight at once (--concurrency), 1 to 256. Default: 4.").optional(),
  rate_limit: text("Client-side request budget (--rate-limit): N/DURATION such as 120/60s, or off. Default: 120/60s.").optional(),
  retries: numberOrText("Retries of a failed request (--retries), 0 to 20. Default: 5.").optional(),
  timeout: numberOrText("Timeout of one request (--timeout): milliseconds or a duration such as 30s. Default: 30000.").optional(),
  max_shift: numberOrText("Traffic-shift risk above this many percentage points (--max-shift), 0 to 100. Default: 50.").optional(),
  max_deletes: numberOrText("Mass-delete risk above this many deletes (--max-deletes). Default: 10 or 30% of the stack.").optional(),
  prune: z.boolean().optional().meta({ description: "Delete owned objects that no manifest names (--prune; --no-prune overrides). Default: false." }),
};

export const EnvironmentSchema = z
  .strictObject({
    ...SETTINGS,
    vars: z
      .record(
        z.string().regex(VARIABLE_NAME, { error: (issue) => `${JSON.stringify(issue.input)} is not a variable name: use letters, digits and _, not starting with a digit` }),
        z.string(),
      )
      .optional()
      .meta({ description: "Values of ${var.NAME} in the manifests, in every string and key." }),
  })
  .meta({ description: "One environment (--env NAME, EDGEPLAN_ENV): its settings override the top level's." });
export type EnvironmentSettings = z.infer<typeof EnvironmentSchema>;

export const ProjectFileSchema = z
  .strictObject({
    ...SETTINGS,
    environments: z
      .record(
        z.string().regex(ENVIRONMENT_NAME, {
          error: (issue) =>
            `${JSON.stringify(issue.input)} is not an environment name: use lowercase letters, digits and -, starting with a letter or digit, at most 63 characters`,
        }),
        EnvironmentSchema,
      )
      .optional()
      .meta({ description: "Named environments (staging, production): chosen with --env NAME or EDGEPLAN_ENV; required when more than one is defined." }),
    policies: z.array(PolicySchema).optional().meta({ description: "Policies in CEL that guard every plan and apply (docs/policies.md)." }),
    policy_files: z
      .union([z.string(), z.array(z.string())])
      .optional()
      .meta({
        description:
          "YAML files of policies (each a mapping with `policies:`), relative to this file and inside its folder; `*` in a file name matches any run of characters (policies/*.yaml).",
      }),
  })
  .meta({
    title: "edgeplan project file",
    description:
      "edgeplan.yaml: defaults of plan, apply, export and validate. A flag wins over the environment variable, which wins over the chosen environment's settings, then this file's top level. " +
      "The API key never goes here: set EDGEPLAN_API_KEY (or the variable api_key_env names) or pass --api-key-file.",
  });
export type ProjectFile = z.infer<typeof ProjectFileSchema>;

/** The keys of the project file, in documented order. */
export const PROJECT_KEYS = Object.keys(ProjectFileSchema.shape) as Array<keyof ProjectFile>;

/**
 * The environment a command runs in (`--env NAME`, or the only one defined), as the plan, the manifests' `${var.*}`
 * and policies see it. Null when the project file defines no environment.
 */
export interface ChosenEnvironment {
  name: string;
  vars: Record<string, string>;
  /** The environment's `api_url` (its own, else the file's top level): an `--api-url` that differs is refused. */
  apiUrl?: string;
}

/** One case of `edgeplan policy test`: a change (and optionally its plan and environment), and what each policy should say. */
export const PolicyCaseSchema = z
  .strictObject({
    description: z.string().optional().meta({ description: "What the case shows." }),
    change: z
      .strictObject({
        address: z.string().optional().meta({ description: "The change's address. Default: the case file's name." }),
        kind: z.enum(["weighted_backend", "saml", "circuit_breaker"]),
        action: z.enum(["create", "update", "delete", "adopt", "takeover", "rename", "rollout", "replace"]),
        before: z.unknown().optional().meta({ description: "The object before, as the JSON plan shows it; absent: null." }),
        after: z.unknown().optional().meta({ description: "The object after, as the JSON plan shows it; absent: null." }),
        final: z.unknown().optional().meta({ description: "What the change commits to (a rollout's end state), as the JSON plan shows it; absent: after." }),
      })
      .optional()
      .meta({ description: "The change judged, as `change` in an expression. Without it, only the policies over the whole plan are judged." }),
    plan: z
      .strictObject({ changes: z.array(z.unknown()), summary: z.record(z.string(), z.number()) })
      .optional()
      .meta({ description: "`plan` in an expression. Default: a plan of the one change (of none without a change)." }),
    env: z
      .strictObject({ name: z.string(), vars: z.record(z.string(), z.string()).optional() })
      .nullable()
      .optional()
      .meta({ description: "`env` in an expression. Default: null (no environment)." }),
    expect: z
      .record(z.string(), z.enum(["pass", "fail", "skip"]))
      .meta({ description: "Policy name to pass (the expression holds), fail (it does not, or cannot be evaluated) or skip (its match leaves the change out)." }),
  })
  .meta({ title: "edgeplan policy test case" });
export type PolicyCase = z.infer<typeof PolicyCaseSchema>;
