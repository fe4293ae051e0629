/**
 * The JSON Schemas edgeplan publishes in schemas/ (`edgeplan schema` writes them; a test fails when the committed
 * files drift from the code). Each entry is generated from a zod schema with zod's own `z.toJSONSchema`. Pure.
 */
import { z, type ZodType } from "zod";
import { EdgeRouteManifestSchema, ManifestDocumentSchema, WeightedBackendManifestSchema } from "./manifest-schema.js";
import { ApplyDocumentSchema } from "./apply-schema.js";
import { PlanFileSchema } from "./plan-schema.js";
import { ProjectFileSchema } from "./project-schema.js";
import { RolloutStatusDocumentSchema } from "./rollout-schema.js";
import { StackStateDocumentSchema } from "./state-schema.js";
import { ValidateDocumentSchema } from "./validate-schema.js";

/** Every published schema: the file name under schemas/ and the zod schema it is generated from. */
export const SCHEMAS: Array<{ file: string; schema: ZodType }> = [
  { file: "manifest.schema.json", schema: ManifestDocumentSchema },
  { file: "weighted-backend.schema.json", schema: WeightedBackendManifestSchema },
  { file: "edge-route.schema.json", schema: EdgeRouteManifestSchema },
  { file: "plan.schema.json", schema: PlanFileSchema },
  { file: "apply.schema.json", schema: ApplyDocumentSchema },
  { file: "validate.schema.json", schema: ValidateDocumentSchema },
  { file: "state.schema.json", schema: StackStateDocumentSchema },
  { file: "rollout-status.schema.json", schema: RolloutStatusDocumentSchema },
  { file: "project.schema.json", schema: ProjectFileSchema },
];

/**
 * The JSON Schema text of one zod schema: draft-07 (the draft editors' YAML and JSON language servers support
 * best), describing what is written (`io: "input"`), pretty-printed with a final newline. Same schema, same bytes.
 */
export function renderJsonSchema(schema: ZodType): string {
  return `${JSON.stringify(z.toJSONSchema(schema, { target: "draft-7", io: "input" }), null, 2)}\n`;
}

/** Every file of `SCHEMAS`, rendered. */
export function renderSchemaFiles(): Array<{ file: string; text: string }> {
  return SCHEMAS.map(({ file, schema }) => ({ file, text: renderJsonSchema(schema) }));
}
