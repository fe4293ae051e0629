/**
 * The zod schema of `apply --format json`: ONE document holding the plan that was shown and the report of the run
 * (null when nothing ran), so that a script reads it with one `JSON.parse`. Parsing with it returns the keys in the
 * order declared here, so the rendering is stable; its JSON Schema is generated into `schemas/apply.schema.json`.
 */
import { z } from "zod";
import { PlanSchema, SamlOutputSchema } from "./plan-schema.js";

const count = z.number().int().min(0);
const remaining = z.object({ address: z.string(), reason: z.string() });

const ChangeResultSchema = z.object({
  address: z.string(),
  kind: z.enum(["weighted_backend", "saml", "circuit_breaker", "inventory"]),
  action: z.enum(["create", "update", "delete", "adopt", "takeover", "rename", "rollout", "replace"]),
  status: z.enum(["done", "failed", "skipped", "not_started"]),
  id: z.string().nullable().describe("the object's id (the one a create answered); null for modules and creates that did not happen"),
  ms: z.number().int().min(0).nullable().describe("how long the change took; null when it did not run"),
  message: z.string().describe("what was done, the error (with the manifest's file:line:col for a 400 on a write), or why it did not run"),
});

/** The report of one run, as `apply --format json` writes it under `report`. */
export const ApplyReportJsonSchema = z.object({
  stack: z.string(),
  status: z
    .enum(["converged", "not_converged", "failed", "interrupted", "halted", "paused", "timed_out"])
    .describe("converged is the only status of a run that left nothing to do (exit 0); paused: a rollout waits for a person (exit 4)"),
  counts: z.object({ done: count, failed: count, skipped: count, not_started: count }),
  changes: z.array(ChangeResultSchema),
  convergence: z.object({
    against: z.enum(["manifests", "plan"]),
    checked: z.boolean(),
    converged: z.boolean(),
    remaining: z.array(remaining).describe("objects that do not match yet"),
    in_progress: z.array(remaining).describe("rollouts whose next step is not due yet"),
    paused: z.array(remaining).optional().describe("rollouts that wait for a person: edgeplan rollout promote NAME"),
    error: z.string().optional().describe("why the check did not run, or what went wrong while it ran"),
  }),
  held: z.array(z.object({ address: z.string(), status: z.enum(["waiting", "halted", "paused"]), message: z.string() })),
  halted: z.array(
    z.object({
      address: z.string(),
      name: z.string(),
      reason: z.string(),
      weights: z.record(z.string(), z.number().int()).optional().describe("the weights written back: those the rollout started from"),
      rollback_failed: z
        .object({ message: z.string(), weights: z.record(z.string(), z.number().int()) })
        .optional()
        .describe("the rollback write failed: why, and the weights traffic is still at; the next run writes the rollback again"),
    }),
  ),
  paused: z
    .array(z.object({ address: z.string(), name: z.string(), reason: z.string() }))
    .describe("rollouts paused by an inconclusive analysis: edgeplan rollout promote NAME goes on, edgeplan rollout abort NAME rolls back"),
  analysis: z
    .array(
      z.object({
        address: z.string(),
        step: z.number().int().min(1),
        steps: z.number().int().min(1),
        metric: z.string(),
        value: z.string().nullable().describe("the value read, as text; null when none was (no data, unreachable)"),
        verdict: z.enum(["success", "failure", "inconclusive"]),
        why: z.string().describe("the expression that decided, or why there is no verdict"),
      }),
    )
    .describe("every measurement of a rollout analysis this run took, before which step"),
  timed_out: z.string().optional().describe("with --wait: the step that was due when --wait-timeout was reached"),
  outputs: z.array(SamlOutputSchema).describe("the SAML values to copy into the IdP, as read after the run"),
});

export const ApplyDocumentSchema = z
  .object({
    format_version: z.literal(1),
    kind: z.literal("apply"),
    plan: PlanSchema.describe("the plan that was shown, as `edgeplan plan --format json` writes it"),
    report: ApplyReportJsonSchema.nullable().describe("null when nothing ran: nothing to change, nothing due, or the apply was refused"),
  })
  .meta({
    title: "edgeplan apply",
    description: "The output of `edgeplan apply --format json` (format_version 1): the plan and the report of the run, in one document.",
  });

/** The report part of the document, as the renderer builds it. */
export type ApplyReportJson = z.input<typeof ApplyReportJsonSchema>;
