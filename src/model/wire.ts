/**
 * The wire contract of the traffic-routing API (docs/api.md), as zod schemas shared by the server that
 * answers it and the client that reads it. Pure: no I/O.
 */
import { z } from "zod";

/** Id prefixes of every resource the API knows. */
export const ID_PREFIX = {
  weightedBackend: "bkdwd",
  httpResponseBackend: "bkdhr",
  tunnelGroupBackend: "bkdtg",
  failoverBackend: "bkdfo",
  staticAddressBackend: "bkdsc",
  edge: "edghts",
  route: "edghtsrt",
  operation: "op",
} as const;

/** Prefixes that may appear as keys of a weighted backend's `backends` map. */
export const BACKEND_PREFIXES = ["bkdwd", "bkdhr", "bkdtg", "bkdfo", "bkdsc"] as const;

/** Fixture backend types and their id prefixes. */
export const FIXTURE_BACKEND_TYPES = {
  http_response: "bkdhr",
  tunnel_group: "bkdtg",
  failover: "bkdfo",
  static_address: "bkdsc",
} as const;
export type FixtureBackendType = keyof typeof FIXTURE_BACKEND_TYPES;

/** `<prefix>_` + 27 base62 characters (a KSUID). */
export const ID_BODY = /^[0-9A-Za-z]{27}$/;
export function idPattern(prefix: string): RegExp {
  return new RegExp(`^${prefix}_[0-9A-Za-z]{27}$`);
}
/** True when `s` is a well-formed id with one of the given prefixes. */
export function isId(s: string, prefixes: readonly string[]): boolean {
  const i = s.indexOf("_");
  if (i < 0) return false;
  const prefix = s.slice(0, i);
  return prefixes.includes(prefix) && ID_BODY.test(s.slice(i + 1));
}
/** True when `s` is any well-formed backend id (weighted or fixture). */
export const isBackendId = (s: string): boolean => isId(s, BACKEND_PREFIXES);

/**
 * The length of `s` in UTF-8 bytes, as the API's limits count it (a lone surrogate counts as the 3 bytes of the
 * replacement character, as TextEncoder writes it), without encoding the text.
 */
export function utf8Bytes(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Why `text` cannot be stored exactly as it was sent, or undefined when it can. A NUL character: PostgreSQL's text
 * refuses it. A lone UTF-16 surrogate (one half of a pair, or a pair in the wrong order): UTF-8 cannot encode it, so
 * a store would keep (and later answer) replacement characters instead, as many as its encoder writes. Both are
 * refused the same way on every store, so that what a write answers is what a read gives back.
 */
export function unstorableText(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return `holds a NUL character (U+0000) at offset ${i}, which the API does not take in text; remove it`;
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      continue;
    }
    const code = c.toString(16).toUpperCase();
    return `holds a lone UTF-16 surrogate (U+${code}) at offset ${i}, which is not Unicode text and cannot be stored as sent; send whole characters`;
  }
  return undefined;
}

export const LIMITS = {
  weightMax: 10_000,
  childrenPerWeightedBackend: 100,
  weightedBackendsPerAccount: 10_000,
  descriptionBytes: 255,
  metadataBytes: 4096,
  idpMetadataBytes: 128 * 1024,
  bodyBytes: 1024 * 1024,
  uint32Max: 4_294_967_295,
  numBucketsMax: 128,
  pageLimitMax: 100,
} as const;

export const NAMEID_FORMATS = [
  "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
  "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
] as const;
export const DEFAULT_NAMEID_FORMAT = NAMEID_FORMATS[0];

/** Values a PUT of the SAML module stores for fields it leaves out (docs/api.md section 3). */
export const SAML_DEFAULTS = {
  enabled: true,
  options_passthrough: false,
  cookie_prefix: "",
  inactivity_timeout: 0,
  maximum_duration: 0,
  force_authn: false,
  allow_idp_initiated: true,
  authorized_groups: [] as string[],
  nameid_format: DEFAULT_NAMEID_FORMAT as string,
} satisfies Partial<SamlSettings>;

/** Values a PUT of the circuit breaker module stores for fields it leaves out (docs/api.md section 4). */
export const CIRCUIT_BREAKER_DEFAULTS = {
  enabled: true,
  volume_threshold: 0,
} satisfies Partial<CircuitBreakerSettings>;

const uint32 = z.number().int().min(0).max(LIMITS.uint32Max);

/** The field names of an object schema, in its order: the one field list of whatever the schema describes. */
export function fieldsOf<S extends z.ZodRawShape>(schema: z.ZodObject<S>): Array<keyof S & string> {
  return Object.keys(schema.shape) as Array<keyof S & string>;
}

/** The named fields of `source`, in the order of `fields` (e.g. a module's settings out of a stored record). */
export function pickFields<T extends object, K extends keyof T & string>(source: T, fields: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const field of fields) out[field] = source[field];
  return out;
}

/** The fields of a weighted backend that the server sets. */
const WeightedBackendGeneratedSchema = z.object({
  id: z.string(),
  uri: z.string(),
  created_at: z.string(),
});
/** The fields a client writes on a weighted backend (every POST and PATCH body carries them all). */
const WeightedBackendWriteSchema = z.object({
  description: z.string(),
  metadata: z.string(),
  backends: z.record(z.string(), z.number().int()),
});
export const WEIGHTED_BACKEND_FIELDS = fieldsOf(WeightedBackendWriteSchema);
export const WEIGHTED_BACKEND_GENERATED_FIELDS = fieldsOf(WeightedBackendGeneratedSchema);

export const WeightedBackendSchema = WeightedBackendGeneratedSchema.extend(WeightedBackendWriteSchema.shape);
export type WeightedBackend = z.infer<typeof WeightedBackendSchema>;

export const WeightedBackendListSchema = z.object({
  backends: z.array(WeightedBackendSchema),
  uri: z.string(),
  next_page_uri: z.string().nullable(),
});
export type WeightedBackendList = z.infer<typeof WeightedBackendListSchema>;

/**
 * The child backends a weighted backend points at, as the API reads them (docs/api.md section 2): per fixture type,
 * its id prefix, the segment of its paths (`/backends/<path>`) and what a message calls it.
 */
export const CHILD_BACKEND_KINDS = {
  http_response: { prefix: "bkdhr", path: "http_response", noun: "HTTP response backend" },
  tunnel_group: { prefix: "bkdtg", path: "tunnel_group", noun: "tunnel group backend" },
  failover: { prefix: "bkdfo", path: "failover", noun: "failover backend" },
  static_address: { prefix: "bkdsc", path: "static", noun: "static address backend" },
} as const satisfies Record<FixtureBackendType, { prefix: string; path: string; noun: string }>;

/** The child backend type of `id` from its prefix, or undefined for a weighted backend or anything else. */
export function childBackendType(id: string): FixtureBackendType | undefined {
  const prefix = id.slice(0, Math.max(0, id.indexOf("_")));
  return (Object.keys(FIXTURE_BACKEND_TYPES) as FixtureBackendType[]).find((t) => FIXTURE_BACKEND_TYPES[t] === prefix);
}

const ChildBackendCommonSchema = z.object({
  id: z.string(),
  uri: z.string(),
  created_at: z.string(),
  description: z.string(),
  metadata: z.string(),
});

/** The fields of each child backend type besides the common ones, as the server answers them, in the API's order. */
const CHILD_BACKEND_SHAPES = {
  http_response: { body: z.string(), headers: z.record(z.string(), z.string()), status_code: z.number().int() },
  tunnel_group: { labels: z.record(z.string(), z.string()), tunnels: z.array(z.object({ id: z.string(), uri: z.string() })) },
  failover: { backends: z.array(z.string()) },
  static_address: { address: z.string(), tls: z.object({ enabled: z.boolean() }) },
} as const;

/** The wire schema of each child backend type. */
export const CHILD_BACKEND_SCHEMAS = {
  http_response: ChildBackendCommonSchema.extend(CHILD_BACKEND_SHAPES.http_response),
  tunnel_group: ChildBackendCommonSchema.extend(CHILD_BACKEND_SHAPES.tunnel_group),
  failover: ChildBackendCommonSchema.extend(CHILD_BACKEND_SHAPES.failover),
  static_address: ChildBackendCommonSchema.extend(CHILD_BACKEND_SHAPES.static_address),
} as const;
export type ChildBackend = z.infer<(typeof CHILD_BACKEND_SCHEMAS)[FixtureBackendType]>;

/** A page of a child backend list (list key `backends`, as the weighted backends'). */
export function childBackendListSchema(type: FixtureBackendType) {
  return z.object({ backends: z.array(CHILD_BACKEND_SCHEMAS[type]), uri: z.string(), next_page_uri: z.string().nullable() });
}

/**
 * What a child backend holds when its fixture leaves a field out (docs/api.md section 2): empty values, status 200.
 * `tunnels` is not among them: no tunnel connects to this server, so a tunnel group always answers `[]`.
 */
export const CHILD_BACKEND_DEFAULTS = {
  http_response: { description: "", metadata: "", body: "", headers: {}, status_code: 200 },
  tunnel_group: { description: "", metadata: "", labels: {} },
  failover: { description: "", metadata: "", backends: [] },
  static_address: { description: "", metadata: "", address: "", tls: { enabled: false } },
} as const satisfies Record<FixtureBackendType, Record<string, unknown>>;

/** The field names of each child backend type after `id`, `uri` and `created_at`, in the API's order. */
export const CHILD_BACKEND_FIELDS = {
  http_response: fieldsOf(CHILD_BACKEND_SCHEMAS.http_response).slice(3),
  tunnel_group: fieldsOf(CHILD_BACKEND_SCHEMAS.tunnel_group).slice(3),
  failover: fieldsOf(CHILD_BACKEND_SCHEMAS.failover).slice(3),
  static_address: fieldsOf(CHILD_BACKEND_SCHEMAS.static_address).slice(3),
} as const;

/** The fields a client sets on the SAML module (all of them, defaults filled). */
export const SamlSettingsSchema = z.object({
  enabled: z.boolean(),
  options_passthrough: z.boolean(),
  cookie_prefix: z.string(),
  inactivity_timeout: uint32,
  maximum_duration: uint32,
  idp_metadata: z.string(),
  force_authn: z.boolean(),
  allow_idp_initiated: z.boolean(),
  authorized_groups: z.array(z.string()),
  nameid_format: z.string(),
});
export type SamlSettings = z.infer<typeof SamlSettingsSchema>;

/** Every client-settable field of the SAML module, in the API's order. */
export const SAML_FIELDS = fieldsOf(SamlSettingsSchema);

/** The read-only fields the server generates for a SAML module. */
const SamlGeneratedSchema = z.object({
  entity_id: z.string(),
  assertion_consumer_service_url: z.string(),
  single_logout_url: z.string(),
  request_signing_certificate_pem: z.string(),
  metadata_url: z.string(),
  idp_metadata_url: z.string(),
});
export const SAML_GENERATED_FIELDS = fieldsOf(SamlGeneratedSchema);

/** The SAML module as the server answers it: settings plus generated, read-only fields. */
export const SamlModuleSchema = SamlSettingsSchema.extend(SamlGeneratedSchema.shape);
export type SamlModule = z.infer<typeof SamlModuleSchema>;

export const CircuitBreakerSettingsSchema = z.object({
  enabled: z.boolean(),
  tripped_duration: uint32,
  rolling_window: uint32,
  num_buckets: uint32,
  volume_threshold: uint32,
  error_threshold_percentage: z.number(),
});
export type CircuitBreakerSettings = z.infer<typeof CircuitBreakerSettingsSchema>;
/** Every client-settable field of the circuit breaker module, in the API's order. */
export const CIRCUIT_BREAKER_FIELDS = fieldsOf(CircuitBreakerSettingsSchema);
/** The circuit breaker module has no generated fields: what the server answers is its settings. */
export const CircuitBreakerModuleSchema = CircuitBreakerSettingsSchema;
export type CircuitBreakerModule = CircuitBreakerSettings;

export const HttpsRouteSchema = z.object({
  id: z.string(),
  edge_id: z.string(),
  uri: z.string(),
  created_at: z.string(),
  match: z.string(),
  match_type: z.string(),
  saml: SamlModuleSchema.nullable(),
  circuit_breaker: CircuitBreakerModuleSchema.nullable(),
});
export type HttpsRoute = z.infer<typeof HttpsRouteSchema>;

export const HttpsEdgeSchema = z.object({
  id: z.string(),
  uri: z.string(),
  created_at: z.string(),
  description: z.string(),
  metadata: z.string(),
  hostports: z.array(z.string()),
  routes: z.array(HttpsRouteSchema),
});
export type HttpsEdge = z.infer<typeof HttpsEdgeSchema>;

export const HttpsEdgeListSchema = z.object({
  https_edges: z.array(HttpsEdgeSchema),
  uri: z.string(),
  next_page_uri: z.string().nullable(),
});
export type HttpsEdgeList = z.infer<typeof HttpsEdgeListSchema>;

export const ErrorBodySchema = z.object({
  error_code: z.string().optional(),
  status_code: z.number().int(),
  msg: z.string(),
  details: z.record(z.string(), z.string()).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** Header names used on the wire (lower case, as node presents them). */
export const HEADERS = {
  version: "ngrok-version",
  operationId: "ngrok-operation-id",
} as const;
export const API_VERSION = "2";
