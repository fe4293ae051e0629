/**
 * The zod schema of `state list --format json`: what a stack owns, and where its bookkeeping lives. The one list of
 * its fields (src/core/state-list.ts builds it, src/render/state.ts writes it); its JSON Schema is generated into
 * `schemas/state.schema.json`. Pure.
 */
import { z } from "zod";

/** What a stack owns, as `state list` finds it in the account's listing. */
export const StackStateSchema = z.object({
  stack: z.string(),
  weighted_backends: z.array(z.object({ address: z.string(), name: z.string(), id: z.string(), protected: z.boolean() })).describe("by owner marker, sorted by address"),
  modules: z
    .array(z.object({ address: z.string(), protected: z.boolean(), inventory: z.string().describe("id of the inventory object that records it") }))
    .describe("by inventory entry, sorted by address"),
  inventory: z.array(z.string()).describe("ids of the stack's inventory objects, oldest first"),
  leases: z.array(z.string()).describe("ids of the stack's lease objects (an apply running, or one that stopped and left it), oldest first"),
});

export type StackState = z.infer<typeof StackStateSchema>;

export const StackStateDocumentSchema = z
  .object({ format_version: z.literal(1), kind: z.literal("state"), ...StackStateSchema.shape })
  .meta({ title: "edgeplan state list", description: "The output of `edgeplan state list --format json` (format_version 1): what a stack owns." });
