/**
 * The zod schema of `validate --format json`: one document with what was read and every diagnostic, each with its
 * file, line and column. Parsing with it returns the keys in the order declared here; its JSON Schema is generated
 * into `schemas/validate.schema.json`.
 */
import { z } from "zod";

const count = z.number().int().min(0);

export const ValidateDocumentSchema = z
  .object({
    format_version: z.literal(1),
    kind: z.literal("validate"),
    ok: z.boolean().describe("true when no diagnostic is an error (validate exits 0)"),
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
      .describe("sorted by file, line and column; the project file's among them"),
  })
  .meta({
    title: "edgeplan validate",
    description: "The output of `edgeplan validate --format json` (format_version 1): what was read and every diagnostic.",
  });

export type ValidateDocument = z.infer<typeof ValidateDocumentSchema>;
