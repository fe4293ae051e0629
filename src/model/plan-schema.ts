/**
 * The zod schema of the JSON plan (`format_version: 1`), which is also the saved plan file (`plan --out`,
 * `apply --plan`). Parsing with it returns the plan with its keys in the order declared here, so the JSON
 * rendering is stable; its JSON Schema is generated into `schemas/plan.schema.json`.
 */
import { z } from "zod";
import { ENVIRONMENT_NAME } from "./project-schema.js";
import type { Plan } from "./plan.js";

const json = z.json();
const count = z.number().int().min(0);
const sourceText = z.string().describe("file:line:col of the manifest that declares the object");

const FieldDiffSchema = z.object({
  path: z.string(),
  op: z.enum(["add", "remove", "change"]),
  before: json,
  after: json,
  lines: z.array(z.string()).nullable(),
});

const WeightChangeSchema = z.object({
  child: z.string(),
  name: z.string().nullable(),
  known_after_apply: z.boolean(),
  before: z.number().int().nullable(),
  after: z.number().int().nullable(),
  share_before: z.number().nullable(),
  share_after: z.number().nullable(),
  changed: z.boolean(),
});

const WeightedBackendValueSchema = z.object({
  description: z.string(),
  metadata: json,
  backends: z.record(z.string(), z.number().int()),
});

const WeightedBackendBodySchema = z.object({
  description: z.string(),
  metadata: z.string(),
  backends: z.record(z.string(), z.number().int()),
});

const OwnerMarkerSchema = z.object({
  stack: z.string(),
  name: z.string(),
  protect: z.literal(true).optional(),
});

const ModuleSettingsSchema = z.record(z.string(), json);

const weightsMap = z.record(z.string(), z.number().int());
const timeText = z.string().describe("RFC 3339 time in UTC with milliseconds");

const MetricProviderSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("prometheus"), address: z.string(), query: z.string(), timeout_ms: z.number().int().min(1) }),
  z.object({
    kind: z.literal("web"),
    url: z.string(),
    method: z.enum(["GET", "POST"]),
    headers: z.record(z.string(), z.string()),
    body: z.string().nullable(),
    json_path: z.string().nullable(),
    timeout_ms: z.number().int().min(1),
  }),
]);

const RolloutMetricSchema = z
  .object({
    name: z.string(),
    provider: MetricProviderSchema,
    success: z.string().nullable(),
    failure: z.string().nullable(),
    initial_delay_ms: z.number().int().min(0),
    interval_ms: z.number().int().min(1),
    count: z.number().int().min(1),
    failure_limit: z.number().int().min(0),
  })
  .describe("A metric of a rollout's analysis, defaults filled: success and failure are CEL over result");

const RolloutCheckSchema = z.object({ url: z.string(), expect_status: z.number().int().nullable(), timeout_ms: z.number().int().min(1) });

const RolloutStepSchema = z
  .object({
    phase: z.enum(["step", "confirm", "return", "halt", "pause"]),
    step: z.number().int().min(1),
    steps: z.number().int().min(1),
    status: z.enum(["due", "waiting", "halted", "paused"]),
    due_at: timeText,
    next_due_at: timeText.nullable(),
    max_step: z.number().int().min(1).max(100),
    shares: z
      .array(z.union([z.number().int().min(1).max(100), z.object({ pause: z.literal(true) })]))
      .min(1)
      .max(101)
      .nullable(),
    interval: z.string(),
    interval_ms: z.number().int().min(1),
    check: RolloutCheckSchema.nullable(),
    analysis: z.array(RolloutMetricSchema).min(1).optional().describe("metrics measured before this step is written; absent when the rollout has none"),
    gates: z
      .object({ check: RolloutCheckSchema.nullable(), analysis: z.array(RolloutMetricSchema) })
      .describe("the rollout's own check and analysis, whichever step this is: what guards every later step"),
    from: weightsMap,
    target: z.string(),
    final: weightsMap,
    halted_reason: z.string().nullable(),
    paused_reason: z.string().optional().describe("Why the rollout waits for a person (status paused): a pause step, an inconclusive analysis"),
  })
  .describe("A step of a progressive rollout: which of how many, whether it is due, and when the next one is");

export const WeightedBackendChangeSchema = z.object({
  kind: z.literal("weighted_backend"),
  action: z.enum(["create", "update", "delete", "adopt", "takeover", "rename", "rollout"]),
  address: z.string(),
  name: z.string(),
  id: z.string().nullable(),
  previous_owner: OwnerMarkerSchema.nullable(),
  fingerprint: z.string().nullable(),
  source: sourceText.nullable(),
  before: WeightedBackendValueSchema.nullable(),
  after: WeightedBackendValueSchema.nullable(),
  diffs: z.array(FieldDiffSchema),
  weights: z.array(WeightChangeSchema),
  request: z.object({
    method: z.enum(["POST", "PATCH", "DELETE"]),
    path: z.string(),
    body: WeightedBackendBodySchema.nullable(),
  }),
  refs: z.record(z.string(), z.string()),
  depends_on: z.array(z.string()),
  notes: z.array(z.string()),
  rollout: RolloutStepSchema.optional(),
});

export const ModuleChangeSchema = z.object({
  kind: z.enum(["saml", "circuit_breaker"]),
  action: z.enum(["replace", "delete"]),
  address: z.string(),
  edge: z.string(),
  route: z.string(),
  fingerprint: z.string(),
  source: sourceText.nullable(),
  before: ModuleSettingsSchema.nullable(),
  after: ModuleSettingsSchema.nullable(),
  diffs: z.array(FieldDiffSchema),
  request: z.object({
    method: z.enum(["PUT", "DELETE"]),
    path: z.string(),
    body: ModuleSettingsSchema.nullable(),
  }),
  depends_on: z.array(z.string()),
  notes: z.array(z.string()),
  recreates: z.literal(true).optional().describe("set when the PUT sets again a module the inventory records and that was deleted outside edgeplan"),
  warnings: z.array(z.string()).optional().describe("what a reviewer must do because of this change; absent when none"),
});

/** The values of a SAML module to copy into the IdP: in the plan, and in an apply's report as read after the run. */
export const SamlOutputSchema = z.object({
  address: z.string(),
  edge: z.string(),
  route: z.string(),
  known_after_apply: z.boolean(),
  entity_id: z.string().nullable(),
  assertion_consumer_service_url: z.string().nullable(),
  single_logout_url: z.string().nullable(),
  metadata_url: z.string().nullable(),
  certificate_sha256: z.string().nullable(),
});

const InventoryEntriesSchema = z.record(z.string(), z.object({ protect: z.literal(true).optional() }).strict());

export const InventoryChangeSchema = z.object({
  kind: z.literal("inventory"),
  action: z.enum(["create", "update", "delete"]),
  address: z.string(),
  stack: z.string(),
  id: z.string().nullable(),
  fingerprint: z.string().nullable(),
  source: z.null(),
  before: InventoryEntriesSchema.nullable(),
  after: InventoryEntriesSchema.nullable(),
  diffs: z.array(FieldDiffSchema),
  request: z.object({
    method: z.enum(["POST", "PATCH", "DELETE"]),
    path: z.string(),
    body: WeightedBackendBodySchema.nullable(),
  }),
  depends_on: z.array(z.string()),
  notes: z.array(z.string()),
});

export const PlanSchema = z
  .object({
    format_version: z.literal(1),
    stack: z.string(),
    environment: z
      .object({
        name: z.string().regex(ENVIRONMENT_NAME).describe("the project file's environment (--env NAME)"),
        api_url: z.string().min(1).max(2048).describe("the API's base URL the plan read, or local:FILE for --local"),
      })
      .nullable()
      .optional()
      .describe("the environment of the project file the plan was made in; null when the file defines none. apply --plan refuses a plan of another environment"),
    api: z
      .object({
        url: z.string().min(1).max(2048).describe("the API's base URL, or local:FILE for the embedded server of --local"),
        account: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .describe("sha256 (hex) of the API key salted with the URL: which account (key) the plan was made with; never the key"),
      })
      .optional()
      .describe("only in a saved plan (plan --out): the API and account it was made for; apply --plan refuses it anywhere else"),
    targeted: z.boolean().default(false).describe("true when --target or --exclude limited the plan: the rest of the stack was not planned"),
    drift: z
      .array(
        z.object({
          address: z.string(),
          what: z.enum(["deleted", "changed"]).describe("deleted: recorded by the stack and gone live; changed: live differs from what edgeplan last wrote"),
          reason: z.string().describe("how edgeplan knows, and what the plan does about it"),
          diffs: z.array(FieldDiffSchema).describe("from what edgeplan last wrote (before) to what is live (after); empty when edgeplan kept no values"),
        }),
      )
      .optional()
      .describe("only when there is some: what changed outside edgeplan since the last apply (docs/ownership.md, Drift), sorted by address"),
    options: z.object({
      prune: z.boolean(),
      takeover: z.boolean(),
      max_shift: z.number(),
      max_deletes: count,
      targets: z.array(z.string()).default([]).describe("--target address patterns; empty: everything"),
      excludes: z.array(z.string()).default([]).describe("--exclude address patterns"),
    }),
    summary: z.object({
      create: count,
      update: count,
      delete: count,
      adopt: count,
      takeover: count,
      rename: count,
      rollout: count,
      module_replace: count,
      module_delete: count,
      orphans_kept: count,
      total: count,
    }),
    risks: z.array(
      z.object({
        rule: z.string().describe("auth-removal, traffic-shift, no-traffic, mass-delete, or the name of a policy of level ack"),
        addresses: z.array(z.string()),
        message: z.string(),
      }),
    ),
    policies: z
      .object({
        rules: count.describe("policies defined"),
        evaluated: count.describe("evaluations: one per matching change and policy, one per plan-scoped policy"),
        passed: count.describe("evaluations whose expression was true"),
        results: z.array(
          z.object({
            rule: z.string(),
            level: z.enum(["warn", "ack", "deny"]),
            address: z.string().nullable().describe("the change's address; null for a policy over the whole plan"),
            message: z.string().describe("the policy's description, or why its expression could not be evaluated"),
            error: z.boolean().describe("true when the expression could not be evaluated"),
          }),
        ),
      })
      .optional()
      .describe("only when the project file defines policies: the violations they found (apply computes them again)"),
    changes: z.array(z.union([WeightedBackendChangeSchema, ModuleChangeSchema, InventoryChangeSchema])),
    orphans: z.array(
      z.object({
        address: z.string(),
        id: z.string(),
        name: z.string(),
        protected: z.boolean(),
        action: z.enum(["delete", "keep"]),
        reason: z.string(),
      }),
    ),
    outputs: z.array(SamlOutputSchema),
    warnings: z.array(z.string()),
    ignored: z
      .array(z.object({ address: z.string(), path: z.string(), source: sourceText.nullable() }))
      .default([])
      .describe("fields that differ and that ignore_changes leaves as they are live"),
    estimate: z
      .object({
        requests: count.describe("requests apply sends from its first write to its last convergence read, when nothing fails"),
        writes: count.describe("one per change"),
        reads: count.describe("reads after the writes that check convergence"),
        seconds: count.describe("about how long those requests take under the rate limit and concurrency"),
        rate_limit: z.string().nullable().describe("the client's request budget, N/DURATION; null when off"),
        concurrency: z.number().int().min(1),
      })
      .describe("what applying this plan costs when nothing fails"),
  })
  .meta({
    title: "edgeplan plan",
    description: "A plan of edgeplan (format_version 1): `edgeplan plan --format json`, `plan --out FILE`, read by `apply --plan FILE`.",
  });

/** The saved plan file is the JSON plan itself. */
export const PlanFileSchema = PlanSchema;

// The schema and the hand-written types must describe the same objects: these lines stop compiling when they drift.
type Parsed = z.infer<typeof PlanSchema>;
const toPlan = (p: Parsed): Plan => p;
const fromPlan = (p: Plan): Parsed => p;
void toPlan;
void fromPlan;
