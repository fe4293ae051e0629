/**
 * The zod schema of `validate --format json`: one document for every outcome, with what was read and every
 * diagnostic, each with its file, line and column (a problem of the project itself, such as an environment that does
 * not exist, among them, at the project file). With `--all-envs`, one entry of the same shape per environment.
 * Parsing with it returns the keys in the order declared here; its JSON Schema is generated into
 * `schemas/validate.schema.json`.
 */
import { z } from "zod";

const count = z.number().int().min(0);

/** What one validation of the manifests gave: in one environment, or in none. */
const run = {
  environment: z.string().nullable().describe("the project file's environment whose vars were used; null without environments or when none could be chosen"),
  ok: z.boolean().describe("true when no diagnostic is an error"),
  files: z.array(z.string()).describe("the manifest files read, relative to the working directory"),
  objects: count.describe("manifest documents read"),
  skipped: z.array(z.string()).describe("YAML files not read as manifests: no document in them has a kind"),
  counts: z.object({ errors: count, warnings: count }),
  diagnostics: z
    .array(
      z.object({
        file: z.string(),
        line: z.number().int().min(1),
        col: z.number().int().min(1),
        severity: z.enum(["error", "warning"]),
        message: z.string(),
      }),
    )
    .describe("sorted by file, line and column; the project file's among them (line 1, column 1 for a problem of the file as a whole)"),
};

export const ValidateRunSchema = z.object(run);

const single = z.object({ format_version: z.literal(1), kind: z.literal("validate"), ...run });

const allEnvs = z.object({
  format_version: z.literal(1),
  kind: z.literal("validate"),
  ok: z.boolean().describe("true when every environment's ok is (validate exits 0)"),
  environments: z.array(ValidateRunSchema).describe("`--all-envs`: one entry per environment of the project file, in its order"),
});

export const ValidateDocumentSchema = z.union([single, allEnvs]).meta({
  title: "edgeplan validate",
  description: "The output of `edgeplan validate --format json` (format_version 1): what was read and every diagnostic; with --all-envs, the same for each environment.",
});

export type ValidateRun = z.infer<typeof ValidateRunSchema>;
export type ValidateDocument = z.infer<typeof ValidateDocumentSchema>;
