/**
 * The zod schema of `rollout status --format json`: every rollout of a stack, as its owner marker and the live
 * object say (and the manifest, when it is read). The one list of its fields (src/core/rollout-status.ts builds it,
 * src/render/rollout-status.ts writes it); its JSON Schema is generated into `schemas/rollout-status.schema.json`. Pure.
 */
import { z } from "zod";

const weights = z.record(z.string(), z.number().int().min(0)).describe("children by id and their weights, sorted by id");

/** One rollout of the stack. */
export const RolloutStatusSchema = z.object({
  address: z.string(),
  name: z.string(),
  id: z.string(),
  status: z
    .enum(["due", "waiting", "paused", "halted", "unknown"])
    .describe("due: the next apply takes a step; waiting: not before next_due_at; paused: waits for `rollout promote`; halted; unknown: no manifest of it was read"),
  step: z.number().int().min(1).describe("the last step written"),
  steps: z.number().int().min(1).nullable().describe("how many steps the rollout has, as the manifest paces it; null without the manifest"),
  step_at: z.string().describe("when the last step was written (RFC 3339, UTC)"),
  next_due_at: z.string().nullable().describe("when the next step may be written; null when halted, paused or without the manifest"),
  weights,
  from: weights.describe("the weights the rollout started from"),
  target: z.string().describe("digest of the manifest's weights the rollout moves toward"),
  final: weights.nullable().describe("the manifest's weights (children by id), when the manifest was read and names this target"),
  paused: z.string().nullable().describe("why it waits for a person"),
  halted: z.string().nullable().describe("why it halted"),
  promoted: z.number().int().nullable().describe("the step whose gate `rollout promote` waived"),
});

export type RolloutStatus = z.infer<typeof RolloutStatusSchema>;

export const RolloutStatusDocumentSchema = z
  .object({ format_version: z.literal(1), kind: z.literal("rollout_status"), stack: z.string(), rollouts: z.array(RolloutStatusSchema).describe("sorted by address") })
  .meta({ title: "edgeplan rollout status", description: "The output of `edgeplan rollout status --format json` (format_version 1): every rollout of a stack." });

export type RolloutStatusDocument = z.infer<typeof RolloutStatusDocumentSchema>;
