/**
 * `validate --format json`: the files read and the diagnostics as one JSON document (src/model/validate-schema.ts),
 * for one run or, with `--all-envs`, for each environment. Pure.
 */
import { InternalError, type Diagnostic } from "../model/errors.js";
import { ValidateDocumentSchema, type ValidateRun } from "../model/validate-schema.js";

/** What validate read: the manifest files, how many documents, the YAML files skipped. */
export interface ValidateRead {
  files: string[];
  objects: number;
  skipped: string[];
}

/** One validation: the environment it ran in (null for none), what it read and its diagnostics, sorted. */
export interface ValidateOutcome {
  environment: string | null;
  read: ValidateRead;
  diagnostics: readonly Diagnostic[];
}

function runOf({ environment, read, diagnostics }: ValidateOutcome): ValidateRun {
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  return {
    environment,
    ok: errors === 0,
    files: read.files,
    objects: read.objects,
    skipped: read.skipped,
    counts: { errors, warnings: diagnostics.length - errors },
    diagnostics: diagnostics.map((d) => ({ file: d.pos.file, line: d.pos.line, col: d.pos.col, severity: d.severity, message: d.message })),
  };
}

/**
 * The document, keys in the schema's order, two-space indentation, a final newline: the one outcome's fields at the
 * top level, or with `allEnvs` an `environments` array of them. Throws InternalError when the document does not
 * match its schema (a bug).
 */
export function renderValidateJson(outcomes: readonly ValidateOutcome[], allEnvs: boolean): string {
  const runs = outcomes.map(runOf);
  const head = { format_version: 1, kind: "validate" };
  const doc = allEnvs ? { ...head, ok: runs.every((r) => r.ok), environments: runs } : { ...head, ...runs[0] };
  const parsed = ValidateDocumentSchema.safeParse(doc);
  if (!parsed.success) {
    throw new InternalError(`the validate document does not match its JSON schema: ${parsed.error.message}`, { cause: parsed.error });
  }
  return `${JSON.stringify(parsed.data, null, 2)}\n`;
}
