/**
 * The zod schemas of what a person writes in a manifest (docs/manifests.md): one per kind, plus one document that
 * is either kind. They check shapes, types, ranges and formats; rules that need several fields or several objects
 * (exactly one IdP metadata source, byte limits, references, duplicates) live in src/manifest. The JSON Schemas in
 * schemas/ are generated from these, so every field carries a description for editors. Pure: no I/O.
 *
 * Messages set here name no field: the loader prefixes the field path (`saml.num_buckets: ...`).
 */
import { z } from "zod";
import { BACKEND_PREFIXES, LIMITS, NAMEID_FORMATS, idPattern, type CircuitBreakerSettings, type SamlSettings } from "./wire.js";
import { NAME_MAX, NAME_PATTERN } from "./state.js";

export const API_VERSION_V1 = "edgeplan/v1";
export const MANIFEST_KINDS = ["WeightedBackend", "EdgeRoute"] as const;
export type ManifestKind = (typeof MANIFEST_KINDS)[number];

/** How a value reads in a message: `the text "yes"`, `the number 5`, `a list`... */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "nothing (an empty value)";
  if (typeof v === "string") return `the text ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`;
  if (typeof v === "number") return Number.isFinite(v) ? `the number ${v}` : `the number ${String(v)}`;
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  return typeof v;
}

/** A number as written in a message: `10001`, `2.5`. */
function show(v: unknown): string {
  return typeof v === "number" ? String(v) : describeValue(v);
}

/**
 * An integer field with both bounds in every message. zod's `.int()` adds a safe-integer check of its own; the
 * shared error function keeps its message about the field's real range.
 */
function intField(min: number, max: number, hint = ""): z.ZodNumber {
  const error = (iss: { input?: unknown; code?: string }): string => {
    const v = iss.input;
    if (typeof v === "number" && Number.isFinite(v) && !Number.isInteger(v)) return `${v} is not a whole number${hint}`;
    if (typeof v === "number") return `${show(v)} is out of range ${min} to ${max}${hint}`;
    return `expected a whole number from ${min} to ${max}, got ${describeValue(v)}`;
  };
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
}

const NAME_RULE = `lower-case letters, digits and '-', starting and ending with a letter or digit, at most ${NAME_MAX} characters`;
const ID_BODY_RULE = "followed by 27 letters and digits";

/** The name of a WeightedBackend manifest. */
export const NameSchema = z
  .string()
  .max(NAME_MAX, { error: (iss) => `name ${JSON.stringify(iss.input)} is longer than ${NAME_MAX} characters; shorten it` })
  .regex(NAME_PATTERN, { error: (iss) => `name ${JSON.stringify(iss.input)} is not valid; use ${NAME_RULE}` })
  .meta({
    description: `Unique among the WeightedBackend manifests: ${NAME_RULE}. Kept in the owner marker of the live object.`,
  });

/** A key of `backends`: a backend id, or the name of another WeightedBackend of the same manifests. */
const BACKEND_KEY_PATTERN = new RegExp(`^(?:(?:${BACKEND_PREFIXES.join("|")})_[0-9A-Za-z]{27}|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$`);
const backendKeyError = (iss: { input?: unknown }): string => {
  const key = String(iss.input);
  if (key.includes("_")) {
    return `key ${JSON.stringify(key)} is not a well-formed backend id; use an id of ${BACKEND_PREFIXES.map((p) => `${p}_`).join(", ")} ${ID_BODY_RULE}, or the name of a WeightedBackend`;
  }
  return `key ${JSON.stringify(key)} is neither a backend id nor a valid WeightedBackend name; name a WeightedBackend (${NAME_RULE}) or give a backend id`;
};
export const BackendKeySchema = z.string().max(NAME_MAX, { error: backendKeyError }).regex(BACKEND_KEY_PATTERN, { error: backendKeyError });

export const WeightSchema = intField(0, LIMITS.weightMax).meta({
  description: `Weight of the child, a whole number from 0 to ${LIMITS.weightMax}. Shares are weight / sum of weights.`,
});

const apiVersion = z
  .literal(API_VERSION_V1, {
    error: (iss) => `${describeValue(iss.input)} is not a supported apiVersion; write ${API_VERSION_V1} or leave apiVersion out`,
  })
  .optional()
  .meta({ description: `Optional; when present it must be ${API_VERSION_V1}.` });

/** A duration as written in a manifest: text such as `5m`, checked by src/model/syntax.ts when normalised. */
function durationText(what: string): z.ZodString {
  return z.string({ error: (iss) => `expected ${what} such as 30s or 5m, got ${describeValue(iss.input)}` });
}

export const RolloutCheckManifestSchema = z
  .strictObject({
    url: z.string().meta({
      description: "GET this URL before each step after the first, and after the last. https, or http to a loopback host; ${EDGEPLAN_VAR_*} allowed.",
    }),
    expect_status: intField(100, 599).optional().meta({ description: "The status that counts as healthy. Default: any 2xx." }),
    timeout: durationText("a duration").optional().meta({ description: "Time allowed for an answer, e.g. 10s (at most 60s). Default: 10s." }),
  })
  .meta({ description: "A health check; a failure (after 2 retries) halts the rollout and writes back the starting weights." });

const PrometheusMetricSchema = z
  .strictObject({
    address: z.string().meta({ description: "The Prometheus server, e.g. https://prometheus.internal:9090: https, or http to a loopback host." }),
    query: z.string().min(1).meta({ description: "An instant query (GET /api/v1/query); it must give one series or a scalar." }),
    timeout: durationText("a duration").optional().meta({ description: "Time allowed for an answer, e.g. 5s (at most 60s). Default: 10s." }),
  })
  .meta({ description: "Reads the value of a Prometheus instant query. No series is no data; more than one series is inconclusive." });

const WebMetricSchema = z
  .strictObject({
    url: z.string().meta({ description: "https, or http to a loopback host; ${EDGEPLAN_VAR_*} allowed." }),
    method: z.enum(["GET", "POST"]).optional().meta({ description: "GET (default) or POST." }),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .meta({ description: "Request headers; a value may take ${EDGEPLAN_VAR_*} variables (only those: never the API key)." }),
    body: z.string().optional().meta({ description: "The body of a POST." }),
    json_path: z.string().optional().meta({
      description:
        "Where the value is in a JSON answer: $ then .name, ['name'] or [index] steps (e.g. $.checks[0].ok). Default: the whole body; a plain-text body that is a number reads as one.",
    }),
    timeout: durationText("a duration").optional().meta({ description: "Time allowed for an answer, e.g. 5s (at most 60s). Default: 10s." }),
  })
  .meta({ description: "Reads a value from the answer of an HTTP request." });

export const RolloutMetricManifestSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, {
      error: (iss) => `metric name ${describeValue(iss.input)} is not valid; use lower-case letters, digits and '-', at most 63 characters`,
    }),
    prometheus: PrometheusMetricSchema.optional(),
    web: WebMetricSchema.optional(),
    success: z.string().optional().meta({ description: "CEL over `result`: true when the measurement is good. Give success, failure or both." }),
    failure: z.string().optional().meta({ description: "CEL over `result`: true when the measurement is bad." }),
    initial_delay: durationText("a duration").optional().meta({ description: "Wait after the previous step's write before the first measurement. Default: 0s." }),
    interval: durationText("a duration").optional().meta({ description: "Time between two measurements (1s to 1h). Default: 10s." }),
    count: intField(1, 100).optional().meta({ description: "Measurements before each step (1 to 100). Default: 1." }),
    failure_limit: intField(0, 99).optional().meta({ description: "Failed measurements allowed; one more rolls back. Default: 0." }),
  })
  .meta({
    description:
      "A metric measured before each step after the first, and after the last: too many failures roll back; no data or a result neither good nor bad pauses the rollout for a person.",
  });
export type RolloutMetricManifest = z.infer<typeof RolloutMetricManifestSchema>;

export const RolloutManifestSchema = z
  .strictObject({
    max_step: intField(1, 100).optional().meta({
      description: "Percentage points: no child's share of the traffic moves more than this in one step (1 to 100). Give max_step or steps.",
    }),
    steps: z
      .array(
        z.union([
          intField(1, 100),
          z.strictObject({ pause: z.literal(true) }).meta({ description: "Wait here for a person: no step past it until edgeplan rollout promote NAME." }),
        ]),
      )
      .min(1)
      .max(100)
      .optional()
      .meta({
        description:
          "The steps as shares of the move, in percent, rising (for example [10, 50, 100]); 100, the manifest's weights, ends the list " +
          "and is added when left out. A {pause: true} item between two shares waits there for edgeplan rollout promote NAME. Give max_step or steps.",
      }),
    interval: durationText("a whole number with s, m or h").meta({
      description: "The least time between two steps: a whole number with s, m or h (at least 1s, at most 168h).",
    }),
    check: RolloutCheckManifestSchema.optional(),
    analysis: z.array(RolloutMetricManifestSchema).min(1).max(10).optional().meta({
      description: "Metrics judged before each step after the first, and after the last (beside check, if given). At most 10.",
    }),
  })
  .meta({
    description:
      "Move a change of the live object's weights in steps (of at most max_step points, or the shares of the move in steps), at least interval apart, instead of one write. " +
      "Creating the object is not a rollout.",
  });
export type RolloutManifest = z.infer<typeof RolloutManifestSchema>;

export const WeightedBackendManifestSchema = z
  .strictObject({
    apiVersion,
    kind: z.literal("WeightedBackend"),
    name: NameSchema,
    description: z
      .string()
      .optional()
      .meta({
        description: `Human-readable description, at most ${LIMITS.descriptionBytes} bytes of UTF-8. Default: empty.`,
      }),
    metadata: z
      .union([z.record(z.string(), z.unknown()), z.string()])
      .optional()
      .meta({
        description:
          "A mapping, or JSON text of an object. Stored as canonical JSON together with edgeplan's owner marker " +
          `(the key "edgeplan" is reserved); at most ${LIMITS.metadataBytes} bytes including the marker. Default: {}.`,
      }),
    backends: z.record(BackendKeySchema, WeightSchema).meta({
      description:
        "Children and their weights. A key is a backend id (bkdwd_, bkdhr_, bkdtg_, bkdfo_, bkdsc_) or the name " +
        `of another WeightedBackend in these manifests. At most ${LIMITS.childrenPerWeightedBackend} children.`,
    }),
    id: z
      .string()
      .regex(idPattern("bkdwd"), {
        error: (iss) => `${describeValue(iss.input)} is not a weighted backend id; adopt an existing weighted backend by its id: bkdwd_ ${ID_BODY_RULE}`,
      })
      .optional()
      .meta({ description: "Adopt this existing weighted backend (bkdwd_...) instead of finding it by owner marker." }),
    protect: z.boolean().optional().meta({ description: "Never delete the live object, even with --prune, until a manifest sets protect: false. Default: false." }),
    ignore_changes: z
      .array(z.string())
      .optional()
      .meta({
        description:
          "Fields set on create and never updated afterwards: description, metadata, metadata.KEY, backends, backends.CHILD. " +
          "A plan shows an ignored field that differs as a note, not a change. The owner marker is never ignorable.",
      }),
    rollout: RolloutManifestSchema.optional(),
  })
  .meta({
    title: "edgeplan WeightedBackend",
    description: "A named group of child backends, each with an integer weight.",
  });
export type WeightedBackendManifest = z.infer<typeof WeightedBackendManifestSchema>;

const seconds = (what: string): string => `; ${what} is a number of seconds`;

/**
 * The manifest shape of a module: exactly the module's client-settable fields (the keys of its wire schema) plus
 * `Extra`. The manifest schemas document every field, so they name each one; this type makes a field added to or
 * removed from the wire schema a compile error here until the manifest follows.
 */
type ModuleManifestShape<Settings, Extra extends string = never> = { [K in keyof Settings | Extra]: z.ZodType };

export const SamlManifestSchema = z
  .strictObject({
    enabled: z.boolean().optional().meta({ description: "Apply the module to traffic. Default: true." }),
    options_passthrough: z.boolean().optional().meta({ description: "Do not enforce authentication on HTTP OPTIONS requests (CORS preflight). Default: false." }),
    cookie_prefix: z.string().optional().meta({ description: 'Prefix of the session cookie. Default: "".' }),
    inactivity_timeout: intField(0, LIMITS.uint32Max, seconds("inactivity_timeout")).optional().meta({
      description: "Seconds of inactivity after which the session ends (uint32; 0: no limit). Default: 0.",
    }),
    maximum_duration: intField(0, LIMITS.uint32Max, seconds("maximum_duration")).optional().meta({
      description: "Maximum seconds of an authenticated session (uint32; 0: no limit). Default: 0.",
    }),
    idp_metadata: z
      .string()
      .optional()
      .meta({
        description: `The IdP's EntityDescriptor XML, inline. Exactly one of idp_metadata and idp_metadata_file. At most ${LIMITS.idpMetadataBytes / 1024} KiB.`,
      }),
    idp_metadata_file: z
      .string()
      .optional()
      .meta({
        description:
          "Path of a file holding the IdP's EntityDescriptor XML, relative to this manifest and inside the manifest root; " +
          "its bytes are sent as they are. Exactly one of idp_metadata and idp_metadata_file.",
      }),
    force_authn: z.boolean().optional().meta({ description: "Make the IdP prompt for credentials on every login. Default: false." }),
    allow_idp_initiated: z.boolean().optional().meta({
      description: "Let the IdP start a login directly. Default: true (the API's default; leaving it out warns).",
    }),
    authorized_groups: z.array(z.string()).optional().meta({ description: "Only members of one of these groups may pass. Default: [] (anyone the IdP admits)." }),
    nameid_format: z
      .enum(NAMEID_FORMATS, {
        error: (iss) => `${describeValue(iss.input)} is not a supported name id format; use one of ${NAMEID_FORMATS.join(", ")}`,
      })
      .optional()
      .meta({ description: `Name id format the SP expects. Default: ${NAMEID_FORMATS[0]}.` }),
  } satisfies ModuleManifestShape<SamlSettings, "idp_metadata_file">)
  .meta({
    title: "SAML module",
    description: "Require login through a SAML identity provider.",
    oneOf: [{ required: ["idp_metadata"] }, { required: ["idp_metadata_file"] }],
  });
export type SamlManifest = z.infer<typeof SamlManifestSchema>;

const fractionError = (iss: { input?: unknown }): string => {
  const v = iss.input;
  if (typeof v !== "number" || !Number.isFinite(v)) return `expected a fraction from 0 to 1, got ${describeValue(v)}`;
  if (v > 1 && v <= 100) {
    const fraction = Number((v / 100).toPrecision(12));
    return `${v} is out of range: error_threshold_percentage is a fraction from 0 to 1; did you mean ${fraction}?`;
  }
  return `${v} is out of range: error_threshold_percentage is a fraction from 0 to 1`;
};

export const CircuitBreakerManifestSchema = z
  .strictObject({
    enabled: z.boolean().optional().meta({ description: "Apply the module to traffic. Default: true." }),
    tripped_duration: intField(1, LIMITS.uint32Max, seconds("tripped_duration")).meta({
      description: "Seconds to wait after the circuit trips before checking the upstream again (uint32, more than 0).",
    }),
    rolling_window: intField(1, LIMITS.uint32Max, seconds("rolling_window")).meta({
      description: "Seconds of the rolling window over which errors are counted (uint32, more than 0).",
    }),
    num_buckets: intField(1, LIMITS.numBucketsMax).meta({
      description: `Number of buckets of the rolling window, 1 to ${LIMITS.numBucketsMax}.`,
    }),
    volume_threshold: intField(0, LIMITS.uint32Max)
      .optional()
      .meta({ description: "Requests in a rolling window below which the circuit never trips (uint32). Default: 0." }),
    error_threshold_percentage: z
      .number({ error: fractionError })
      .min(0, { error: fractionError })
      .max(1, { error: fractionError })
      .meta({ description: "Error rate that trips the circuit, a fraction from 0 to 1 (0.5 is 50 %)." }),
  } satisfies ModuleManifestShape<CircuitBreakerSettings>)
  .meta({ title: "Circuit breaker module", description: "Stop sending traffic to an unhealthy upstream." });
export type CircuitBreakerManifest = z.infer<typeof CircuitBreakerManifestSchema>;

/** The word that says a module must not exist. */
export const ABSENT = "absent";
const absent = z.literal(ABSENT).meta({ description: "The module must not exist: delete it if present." });

export const EdgeRouteManifestSchema = z
  .strictObject({
    apiVersion,
    kind: z.literal("EdgeRoute"),
    edge: z
      .string()
      .regex(idPattern("edghts"), {
        error: (iss) =>
          `${describeValue(iss.input)} is not an HTTPS edge id; use edghts_ ${ID_BODY_RULE}` +
          (typeof iss.input === "string" && iss.input.startsWith("edghtsrt_") ? " (this is a route id: are edge and route swapped?)" : ""),
      })
      .meta({ description: "Id of the HTTPS edge (edghts_...)." }),
    route: z
      .string()
      .regex(idPattern("edghtsrt"), {
        error: (iss) =>
          `${describeValue(iss.input)} is not an HTTPS edge route id; use edghtsrt_ ${ID_BODY_RULE}` +
          (typeof iss.input === "string" && iss.input.startsWith("edghts_") ? " (this is an edge id: are edge and route swapped?)" : ""),
      })
      .meta({ description: "Id of the route of that edge (edghtsrt_...)." }),
    saml: z.union([SamlManifestSchema, absent]).optional().meta({ description: "The SAML module: its settings, or absent. Left out: edgeplan does not manage it." }),
    circuit_breaker: z
      .union([CircuitBreakerManifestSchema, absent])
      .optional()
      .meta({ description: "The circuit breaker module: its settings, or absent. Left out: edgeplan does not manage it." }),
    protect: z.boolean().optional().meta({
      description:
        "Never delete this route's modules when their blocks are removed from the manifests, even with --prune, until a manifest declares them with protect: false. Default: false.",
    }),
    ignore_changes: z
      .array(z.string())
      .optional()
      .meta({
        description:
          "Module fields set when the module is set and never updated afterwards: saml.FIELD, circuit_breaker.FIELD " +
          "(e.g. saml.authorized_groups). A plan shows an ignored field that differs as a note, not a change.",
      }),
  })
  .meta({
    title: "edgeplan EdgeRoute",
    description: "The SAML and circuit breaker modules of one route of an HTTPS edge.",
  });
export type EdgeRouteManifest = z.infer<typeof EdgeRouteManifestSchema>;

/** One manifest document: either kind. */
export const ManifestDocumentSchema = z
  .discriminatedUnion("kind", [WeightedBackendManifestSchema, EdgeRouteManifestSchema])
  .meta({ title: "edgeplan manifest", description: "One document of an edgeplan manifest file: a WeightedBackend or an EdgeRoute." });
export type ManifestDocument = z.infer<typeof ManifestDocumentSchema>;

/** The schema of each kind, for the loader's dispatch on `kind`. */
export const KIND_SCHEMAS = {
  WeightedBackend: WeightedBackendManifestSchema,
  EdgeRoute: EdgeRouteManifestSchema,
} as const;
