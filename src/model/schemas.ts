/**
 * The JSON Schemas edgeplan publishes in schemas/ (`edgeplan schema` writes them; a test fails when the committed
 * files drift from the code). Each entry is generated from a zod schema with zod's own `z.toJSONSchema`. Pure.
 */
import { z, type ZodType } from "zod";
import { EdgeRouteManifestSchema, ManifestDocumentSchema, WeightedBackendManifestSchema } from "./manifest-schema.js";
import { AgentConfigSchema } from "./agent-config-schema.js";
import { ApplyDocumentSchema } from "./apply-schema.js";
import { PlanFileSchema } from "./plan-schema.js";
import { PolicyCaseSchema, PolicyFileSchema, ProjectFileSchema } from "./project-schema.js";
import { RolloutStatusDocumentSchema } from "./rollout-schema.js";
import { StackStateDocumentSchema } from "./state-schema.js";
import { ValidateDocumentSchema } from "./validate-schema.js";

/**
 * Every published schema: the file name under schemas/ and the zod schema it is generated from. `manifest`: a
 * manifest's, whose strings and keys may hold variables.
 */
export const SCHEMAS: Array<{ file: string; schema: ZodType; manifest?: true }> = [
  { file: "manifest.schema.json", schema: ManifestDocumentSchema, manifest: true },
  { file: "weighted-backend.schema.json", schema: WeightedBackendManifestSchema, manifest: true },
  { file: "edge-route.schema.json", schema: EdgeRouteManifestSchema, manifest: true },
  { file: "plan.schema.json", schema: PlanFileSchema },
  { file: "apply.schema.json", schema: ApplyDocumentSchema },
  { file: "validate.schema.json", schema: ValidateDocumentSchema },
  { file: "state.schema.json", schema: StackStateDocumentSchema },
  { file: "rollout-status.schema.json", schema: RolloutStatusDocumentSchema },
  { file: "project.schema.json", schema: ProjectFileSchema },
  { file: "policies.schema.json", schema: PolicyFileSchema },
  { file: "policy-test.schema.json", schema: PolicyCaseSchema },
  { file: "agent.schema.json", schema: AgentConfigSchema },
];

/**
 * The JSON Schema text of one zod schema: draft-07 (the draft editors' YAML and JSON language servers support
 * best), describing what is written (`io: "input"`), pretty-printed with a final newline. Same schema, same bytes.
 */
export function renderJsonSchema(schema: ZodType, manifest = false): string {
  const json = z.toJSONSchema(schema, { target: "draft-7", io: "input" });
  return `${JSON.stringify(manifest ? allowVariables(json) : json, null, 2)}\n`;
}

/**
 * A manifest's JSON Schema where every `pattern` also accepts text holding `${`: the loader checks a value after
 * its variables are replaced (`${var.blue}` as a backend id key), so an editor must not refuse it as written.
 */
function allowVariables(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(allowVariables);
  if (node === null || typeof node !== "object") return node;
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, key === "pattern" && typeof value === "string" ? `${value}|\\$\\{` : allowVariables(value)]));
}

/** Every file of `SCHEMAS`, rendered. */
export function renderSchemaFiles(): Array<{ file: string; text: string }> {
  return SCHEMAS.map(({ file, schema, manifest }) => ({ file, text: renderJsonSchema(schema, manifest === true) }));
}
