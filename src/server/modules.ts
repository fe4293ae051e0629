/**
 * The SAML and circuit breaker modules of an HTTPS edge route (docs/api.md sections 3 and 4): replace (PUT), get,
 * delete. A PUT replaces the whole module: every field left out takes its default. Both body shapes are taken:
 * the fields at the top level, or the OpenAPI clients' `{"edge_id", "id", "module": {...}}`.
 */
import {
  LIMITS,
  NAMEID_FORMATS,
  SAML_DEFAULTS,
  SAML_FIELDS,
  SAML_GENERATED_FIELDS,
  CIRCUIT_BREAKER_DEFAULTS,
  CIRCUIT_BREAKER_FIELDS,
  type CircuitBreakerSettings,
  type SamlSettings,
} from "../model/wire.js";
import { idpMetadataProblem } from "../kinds/saml-metadata.js";
import { CertificateNeeded, type Handler, type RequestContext } from "./context.js";
import { findRoute } from "./edges.js";
import { fieldError, HttpError, invalidField } from "./http-error.js";
import { rejectQuery } from "./paging.js";
import { renderCircuitBreaker, renderSaml, samlUrls } from "./render.js";
import type { StoredSaml } from "./store.js";
import { isPlainObject, readBoolean, readNumber, readString, readStringList, readUint32, rejectUnknownFields, type JsonObject } from "./validate.js";

const ENVELOPE_FIELDS: ReadonlySet<string> = new Set(["edge_id", "id", "module"]);
const NO_FIELDS: ReadonlySet<string> = new Set();

// idp_metadata_url is accepted when empty (clients echo what they read); every other generated field is refused.
const SAML_ACCEPTED: ReadonlySet<string> = new Set([...SAML_FIELDS, "idp_metadata_url"]);
const SAML_GENERATED: ReadonlySet<string> = new Set(SAML_GENERATED_FIELDS.filter((f) => f !== "idp_metadata_url"));

const CB_FIELDS: ReadonlySet<string> = new Set(CIRCUIT_BREAKER_FIELDS);

const topLevelFields = new Map<ReadonlySet<string>, ReadonlySet<string>>();
/** The fields of the top-level body shape: the module's own plus the path ids. */
function withPathIds(accepted: ReadonlySet<string>): ReadonlySet<string> {
  let set = topLevelFields.get(accepted);
  if (!set) {
    set = new Set([...accepted, "edge_id", "id"]);
    topLevelFields.set(accepted, set);
  }
  return set;
}

/**
 * Finds the module's fields in either body shape and checks `edge_id`/`id` against the path. Returns the
 * fields and the prefix their names take in messages ("module." in the wrapped shape).
 */
function unwrapModuleBody(
  body: JsonObject | undefined,
  edgeId: string,
  routeId: string,
  accepted: ReadonlySet<string>,
  generated: ReadonlySet<string>,
): { fields: JsonObject; where: string } {
  if (!body) throw new HttpError(400, "ERR_NGROK_213", "the request needs a JSON object body");
  for (const [key, expected] of [
    ["edge_id", edgeId],
    ["id", routeId],
  ] as const) {
    const value = readString(body, key, key);
    if (value !== undefined && value !== expected) {
      throw invalidField(key, `"${value.slice(0, 64)}" does not match the id in the path (${expected}); leave it out or send the same id`);
    }
  }
  if (Object.hasOwn(body, "module")) {
    rejectUnknownFields(body, ENVELOPE_FIELDS, "");
    if (!isPlainObject(body.module)) throw invalidField("module", "expected an object holding the module's fields");
    rejectUnknownFields(body.module, accepted, "module", generated);
    return { fields: body.module, where: "module." };
  }
  rejectUnknownFields(body, withPathIds(accepted), "", generated);
  return { fields: body, where: "" };
}

/** Validates a SAML module body and fills the defaults of docs/api.md section 3. */
export function parseSamlSettings(fields: JsonObject, where: string): SamlSettings {
  const f = (k: string): string => where + k;
  const idpMetadataUrl = readString(fields, "idp_metadata_url", f("idp_metadata_url"));
  if (idpMetadataUrl !== undefined && idpMetadataUrl !== "") {
    throw fieldError(
      "ERR_NGROK_214",
      f("idp_metadata_url"),
      `${f("idp_metadata_url")}: fetching IdP metadata from a URL is not supported; send the XML in idp_metadata instead`,
    );
  }
  const settings: SamlSettings = {
    enabled: readBoolean(fields, "enabled", f("enabled")) ?? SAML_DEFAULTS.enabled,
    options_passthrough: readBoolean(fields, "options_passthrough", f("options_passthrough")) ?? SAML_DEFAULTS.options_passthrough,
    cookie_prefix: readString(fields, "cookie_prefix", f("cookie_prefix")) ?? SAML_DEFAULTS.cookie_prefix,
    inactivity_timeout: readUint32(fields, "inactivity_timeout", f("inactivity_timeout")) ?? SAML_DEFAULTS.inactivity_timeout,
    maximum_duration: readUint32(fields, "maximum_duration", f("maximum_duration")) ?? SAML_DEFAULTS.maximum_duration,
    idp_metadata: readString(fields, "idp_metadata", f("idp_metadata")) ?? "",
    force_authn: readBoolean(fields, "force_authn", f("force_authn")) ?? SAML_DEFAULTS.force_authn,
    allow_idp_initiated: readBoolean(fields, "allow_idp_initiated", f("allow_idp_initiated")) ?? SAML_DEFAULTS.allow_idp_initiated,
    authorized_groups: readStringList(fields, "authorized_groups", f("authorized_groups")) ?? [...SAML_DEFAULTS.authorized_groups],
    nameid_format: readString(fields, "nameid_format", f("nameid_format")) ?? SAML_DEFAULTS.nameid_format,
  };
  if (!(NAMEID_FORMATS as readonly string[]).includes(settings.nameid_format)) {
    throw fieldError(
      "ERR_NGROK_1693",
      f("nameid_format"),
      `${f("nameid_format")}: "${settings.nameid_format.slice(0, 100)}" is not a supported name id format; use one of ${NAMEID_FORMATS.join(", ")}`,
    );
  }
  if (settings.idp_metadata === "") {
    throw fieldError("ERR_NGROK_7091", f("idp_metadata"), `${f("idp_metadata")}: is required: the XML EntityDescriptor of the identity provider`);
  }
  const bytes = Buffer.byteLength(settings.idp_metadata, "utf8");
  if (bytes > LIMITS.idpMetadataBytes) {
    throw fieldError("ERR_NGROK_7080", f("idp_metadata"), `${f("idp_metadata")}: is ${bytes} bytes long, more than the limit of ${LIMITS.idpMetadataBytes} bytes`);
  }
  const problem = idpMetadataProblem(settings.idp_metadata);
  if (problem) throw fieldError("ERR_NGROK_7083", f("idp_metadata"), `${f("idp_metadata")}: ${problem}`);
  return settings;
}

/** Validates a circuit breaker body. Fields without a default in docs/api.md section 4 are required. */
export function parseCircuitBreakerSettings(fields: JsonObject, where: string): CircuitBreakerSettings {
  const f = (k: string): string => where + k;
  const enabled = readBoolean(fields, "enabled", f("enabled")) ?? CIRCUIT_BREAKER_DEFAULTS.enabled;
  const tripped = readUint32(fields, "tripped_duration", f("tripped_duration"));
  const rolling = readUint32(fields, "rolling_window", f("rolling_window"));
  const buckets = readUint32(fields, "num_buckets", f("num_buckets"));
  const volume = readUint32(fields, "volume_threshold", f("volume_threshold")) ?? CIRCUIT_BREAKER_DEFAULTS.volume_threshold;
  const errorThreshold = readNumber(fields, "error_threshold_percentage", f("error_threshold_percentage"));
  if (tripped === undefined || tripped === 0) {
    throw fieldError(
      "ERR_NGROK_7016",
      f("tripped_duration"),
      `${f("tripped_duration")}: ${tripped === undefined ? "is required" : "must be greater than 0"}: the seconds to wait after the circuit trips`,
    );
  }
  if (rolling === undefined || rolling === 0) {
    throw fieldError(
      "ERR_NGROK_7017",
      f("rolling_window"),
      `${f("rolling_window")}: ${rolling === undefined ? "is required" : "must be greater than 0"}: the seconds of the statistical window`,
    );
  }
  if (buckets === undefined || buckets < 1 || buckets > LIMITS.numBucketsMax) {
    throw fieldError(
      "ERR_NGROK_7018",
      f("num_buckets"),
      `${f("num_buckets")}: ${buckets === undefined ? "is required" : `${buckets} is out of range`}: give a number of buckets from 1 to ${LIMITS.numBucketsMax}`,
    );
  }
  if (errorThreshold === undefined || errorThreshold < 0 || errorThreshold > 1) {
    throw fieldError(
      "ERR_NGROK_7011",
      f("error_threshold_percentage"),
      `${f("error_threshold_percentage")}: ${errorThreshold === undefined ? "is required" : `${errorThreshold} is out of range`}: give a fraction from 0.0 to 1.0` +
        (errorThreshold !== undefined && errorThreshold > 1 && errorThreshold <= 100 ? ` (${errorThreshold} percent is ${errorThreshold / 100})` : ""),
    );
  }
  return {
    enabled,
    tripped_duration: tripped,
    rolling_window: rolling,
    num_buckets: buckets,
    volume_threshold: volume,
    error_threshold_percentage: errorThreshold,
  };
}

function moduleNotSet(module: string, req: RequestContext): HttpError {
  const [edgeId, routeId] = req.params as [string, string];
  return new HttpError(
    404,
    "ERR_NGROK_7400",
    `the ${module === "saml" ? "SAML" : "circuit breaker"} module of route ${routeId} of HTTPS edge ${edgeId} is not set; PUT it to set it`,
    { module },
  );
}

export const getSaml: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const route = await findRoute(tx, req.account, req.params);
  if (!route.saml) throw moduleNotSet("saml", req);
  return { status: 200, body: renderSaml(server.spBase, route.id, route.saml) };
};

export const putSaml: Handler = async (server, tx, req) => {
  rejectQuery(req.query);
  const [edgeId, routeId] = req.params as [string, string];
  const route = await findRoute(tx, req.account, req.params, true);
  const { fields, where } = unwrapModuleBody(req.body, edgeId, routeId, SAML_ACCEPTED, SAML_GENERATED);
  const settings = parseSamlSettings(fields, where);
  // The certificate is made when the module is first set and kept by every later PUT. It is made outside the
  // transaction (see CertificateNeeded); the route is locked from this read to the commit, so of concurrent first
  // PUTs the first to commit sets its certificate and the others, run again, find it and drop theirs.
  const certificate_pem = route.saml?.certificate_pem ?? req.signingCertificate;
  if (certificate_pem === undefined) throw new CertificateNeeded(samlUrls(server.spBase, routeId).entityId);
  const stored: StoredSaml = { ...settings, certificate_pem };
  await tx.setSaml(req.account, routeId, stored);
  return { status: 200, body: renderSaml(server.spBase, routeId, stored) };
};

export const deleteSaml: Handler = async (_server, tx, req) => {
  rejectQuery(req.query);
  const route = await findRoute(tx, req.account, req.params, true);
  if (!route.saml) throw moduleNotSet("saml", req);
  await tx.setSaml(req.account, route.id, null);
  return { status: 204 };
};

export const getCircuitBreaker: Handler = async (_server, tx, req) => {
  rejectQuery(req.query);
  const route = await findRoute(tx, req.account, req.params);
  if (!route.circuit_breaker) throw moduleNotSet("circuit_breaker", req);
  return { status: 200, body: renderCircuitBreaker(route.circuit_breaker) };
};

export const putCircuitBreaker: Handler = async (_server, tx, req) => {
  rejectQuery(req.query);
  const [edgeId, routeId] = req.params as [string, string];
  await findRoute(tx, req.account, req.params, true);
  const { fields, where } = unwrapModuleBody(req.body, edgeId, routeId, CB_FIELDS, NO_FIELDS);
  const settings = parseCircuitBreakerSettings(fields, where);
  await tx.setCircuitBreaker(req.account, routeId, settings);
  return { status: 200, body: renderCircuitBreaker(settings) };
};

export const deleteCircuitBreaker: Handler = async (_server, tx, req) => {
  rejectQuery(req.query);
  const route = await findRoute(tx, req.account, req.params, true);
  if (!route.circuit_breaker) throw moduleNotSet("circuit_breaker", req);
  await tx.setCircuitBreaker(req.account, route.id, null);
  return { status: 204 };
};
