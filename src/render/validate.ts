/**
 * `validate --format json`: the files read and the diagnostics as one JSON document (src/model/validate-schema.ts).
 * Pure.
 */
import { InternalError, type Diagnostic } from "../model/errors.js";
import { ValidateDocumentSchema } from "../model/validate-schema.js";

/** What validate read: the manifest files, how many documents, the YAML files skipped. */
export interface ValidateRead {
  files: string[];
  objects: number;
  skipped: string[];
}

/**
 * The document, keys in the schema's order, two-space indentation, a final newline. `diagnostics` are given sorted.
 * Throws InternalError when the document does not match its schema (a bug).
 */
export function renderValidateJson(read: ValidateRead, diagnostics: readonly Diagnostic[]): string {
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const doc = {
    format_version: 1,
    kind: "validate",
    ok: errors === 0,
    files: read.files,
    objects: read.objects,
    skipped: read.skipped,
    counts: { errors, warnings: diagnostics.length - errors },
    diagnostics: diagnostics.map((d) => ({ file: d.pos.file, line: d.pos.line, col: d.pos.col, severity: d.severity, message: d.message })),
  };
  const parsed = ValidateDocumentSchema.safeParse(doc);
  if (!parsed.success) {
    throw new InternalError(`the validate document does not match its JSON schema: ${parsed.error.message}`, { cause: parsed.error });
  }
  return `${JSON.stringify(parsed.data, null, 2)}\n`;
}
