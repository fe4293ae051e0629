/**
 * The steps of the HTTP fuzz (test/server/fuzz.test.ts), as fast-check arbitraries: what to send to which endpoint,
 * with the objects named by position (`n`) among those the lane holds when the step runs, since their ids are not
 * known when the steps are drawn. Text is drawn to hit what stores and encoders get wrong: NUL, lone surrogates,
 * characters of 1 to 4 UTF-8 bytes, and lengths around the byte limits.
 */
import fc from "fast-check";
import { NAMEID_FORMATS } from "../../src/model/wire.js";

/** Characters that encoders, stores and parsers treat specially. */
const SPECIAL = [
  "\u0000",
  "\ud800",
  "\udbff",
  "\udc00",
  "\udfff",
  "\ud83d\ude00",
  "\ufffd",
  "\uffff",
  "\ufffe",
  "\u{10ffff}",
  "é",
  "€",
  "\u0301",
  "\u2028",
  "\u200d",
  "\ufeff",
  "\u0001",
  "\u001f",
  "\u007f",
  "\\",
  '"',
  "<",
  "&",
  "%00",
  "'",
  "\r\n",
];

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 6 }) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL) },
);

/** Text up to the byte limits and across them (255 and 4096 bytes), in characters of 1 to 4 bytes. */
const long = fc
  .tuple(fc.constantFrom("a", "é", "€", "😀", "\ud800", "\u0000"), fc.integer({ min: 50, max: 1100 }), fc.string({ maxLength: 3 }))
  .map(([c, n, tail]) => c.repeat(n) + tail);

export const text: fc.Arbitrary<string> = fc.oneof({ weight: 10, arbitrary: fc.array(piece, { maxLength: 6 }).map((p) => p.join("")) }, { weight: 1, arbitrary: long });

const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);

/** A field's value: text mostly, sometimes another JSON type. */
const textField = fc.oneof({ weight: 12, arbitrary: text as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: wrongType });

const uint32ish: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 4_294_967_295 }) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom(-1, 4_294_967_296, 1.5, -0, "5", null, 1e300) },
);

/** An object of the lane's: one it holds (`own`, the n-th), an id it never made, or a malformed id. */
export interface TargetRef {
  to: "own" | "missing" | "malformed";
  n: number;
}
const target: fc.Arbitrary<TargetRef> = fc.record({
  to: fc.oneof({ weight: 8, arbitrary: fc.constant("own" as const) }, { weight: 1, arbitrary: fc.constantFrom("missing" as const, "malformed" as const) }),
  n: fc.nat(1000),
});

/** A key of a `backends` map: one of the lane's weighted backends, a fixture backend, the object itself, and worse. */
export interface ChildRef {
  to: "own" | "fixture" | "self" | "missing" | "malformed";
  n: number;
  /** A malformed key's text. */
  key: string;
  weight: unknown;
}
const child: fc.Arbitrary<ChildRef> = fc.record({
  to: fc.oneof(
    { weight: 5, arbitrary: fc.constant("own" as const) },
    { weight: 4, arbitrary: fc.constant("fixture" as const) },
    { weight: 1, arbitrary: fc.constantFrom("self" as const, "missing" as const, "malformed" as const) },
  ),
  n: fc.nat(1000),
  key: text,
  weight: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 10_000 }) }, { weight: 1, arbitrary: fc.constantFrom(-1, 10_001, 2.5, "7", null) }),
});

const wbFields = fc.record({ description: textField, metadata: textField, extra: fc.constantFrom("uri", "created_at", "bogus", "__proto__") }, { requiredKeys: [] });
/** `null`: no `backends` field. */
const children = fc.option(fc.array(child, { maxLength: 5 }), { freq: 6 });
/** Bytes that are not UTF-8, written raw into a string of the body: the server reads them as U+FFFD. */
const rawBytes: fc.Arbitrary<number[] | null> = fc.option(
  fc.constantFrom<number[]>([0xff], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80]),
  { freq: 10 },
);

/** A route: one of the lane's two (0 or 1), one that does not exist, one on an edge that does not exist, malformed. */
export type RouteRef = 0 | 1 | "missing" | "missing-edge" | "malformed";
const route: fc.Arbitrary<RouteRef> = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom<RouteRef>(0, 1) },
  { weight: 1, arbitrary: fc.constantFrom<RouteRef>("missing", "missing-edge", "malformed") },
);

/** Where the ids of a module's body go: nowhere, at the top level, or around a `module` object. */
export interface ModuleShape {
  wrapped: boolean;
  edgeId: "absent" | "same" | "other";
  routeId: "absent" | "same" | "other";
}
const moduleShape: fc.Arbitrary<ModuleShape> = fc.record({
  wrapped: fc.boolean(),
  edgeId: fc.constantFrom("absent", "absent", "same", "other"),
  routeId: fc.constantFrom("absent", "absent", "same", "other"),
});

const samlFields = fc.record(
  {
    enabled: fc.oneof({ weight: 6, arbitrary: fc.boolean() as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: wrongType }),
    options_passthrough: fc.boolean(),
    cookie_prefix: textField,
    inactivity_timeout: uint32ish,
    maximum_duration: uint32ish,
    idp_metadata: fc.oneof(
      { weight: 8, arbitrary: fc.constant({ xml: "valid" }) },
      { weight: 2, arbitrary: text.map((t) => ({ xml: "inserted", t })) },
      { weight: 1, arbitrary: textField.map((v) => ({ xml: "value", v })) },
    ),
    force_authn: fc.boolean(),
    allow_idp_initiated: fc.boolean(),
    authorized_groups: fc.oneof({ weight: 6, arbitrary: fc.array(text, { maxLength: 4 }) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: wrongType }),
    nameid_format: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...NAMEID_FORMATS) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: textField }),
    idp_metadata_url: fc.constantFrom("", "https://idp.example.com/metadata"),
    extra: fc.constantFrom("entity_id", "request_signing_certificate_pem", "bogus"),
  },
  { requiredKeys: ["idp_metadata"] },
);

const circuitBreakerFields = fc.record(
  {
    enabled: fc.oneof({ weight: 6, arbitrary: fc.boolean() as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: wrongType }),
    tripped_duration: uint32ish,
    rolling_window: uint32ish,
    num_buckets: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 128 }) as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: uint32ish }),
    volume_threshold: uint32ish,
    error_threshold_percentage: fc.oneof(
      { weight: 6, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) as fc.Arbitrary<unknown> },
      { weight: 1, arbitrary: fc.constantFrom(-0, 1.0000001, 50, -0.1, "0.5", null) },
    ),
    extra: fc.constantFrom("bogus", "module"),
  },
  { requiredKeys: ["tripped_duration", "rolling_window", "num_buckets", "error_threshold_percentage"] },
);

/** A list's query: parameters in order, each a key and its value, or a raw piece sent as it is. */
export type QueryPart = { key: string; value: string; own?: number } | { raw: string };
const queryPart: fc.Arbitrary<QueryPart> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 120 }).map((n) => ({ key: "limit", value: String(n) })) },
  { weight: 4, arbitrary: fc.record({ key: fc.constantFrom("before_id", "beforeId"), value: fc.constant(""), own: fc.nat(1000) }) },
  { weight: 2, arbitrary: fc.record({ key: fc.constantFrom("before_id", "beforeId", "limit"), value: text }) },
  { weight: 1, arbitrary: fc.record({ key: text, value: text }) },
  { weight: 1, arbitrary: fc.constantFrom("before_id=%00", "before_id=%ED%A0%80", "beforeId=%ff", "limit=%00", "before_id=%zz", "=", "&&").map((raw) => ({ raw })) },
);
const query = fc.array(queryPart, { maxLength: 3 });

/** Requests every client gets wrong sometimes; each has one right answer (see ODD_ANSWERS in http-fuzz.ts). */
export const ODD_KINDS = [
  "unknown-path",
  "wrong-method",
  "no-version",
  "wrong-version",
  "no-key",
  "wrong-key",
  "body-on-get",
  "wrong-content-type",
  "not-json",
  "json-array",
  "query-on-get",
  "malformed-id",
] as const;
export type OddKind = (typeof ODD_KINDS)[number];

export type Step =
  | { op: "createWb"; fields: Record<string, unknown>; children: ChildRef[] | null; rawBytes: number[] | null }
  | { op: "patchWb"; target: TargetRef; fields: Record<string, unknown>; children: ChildRef[] | null; bodyId: "absent" | "same" | "other" }
  | { op: "getWb" | "deleteWb"; target: TargetRef }
  | { op: "listWb" | "listEdges"; query: QueryPart[] }
  | { op: "getEdge"; target: TargetRef }
  | { op: "getRoute"; route: RouteRef }
  | { op: "putSaml"; route: RouteRef; fields: Record<string, unknown>; shape: ModuleShape }
  | { op: "putCircuitBreaker"; route: RouteRef; fields: Record<string, unknown>; shape: ModuleShape }
  | { op: "getModule" | "deleteModule"; kind: "saml" | "circuit_breaker"; route: RouteRef }
  | { op: "odd"; kind: OddKind };

const s = <T extends string>(op: T): fc.Arbitrary<T> => fc.constant(op);

/**
 * One step. Weights favour writes and the reads that check them; a SAML DELETE is rare, as the PUT after it makes
 * an RSA key (tens of milliseconds).
 */
export const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 80, arbitrary: fc.record({ op: s("createWb"), fields: wbFields, children, rawBytes }) },
  { weight: 80, arbitrary: fc.record({ op: s("patchWb"), target, fields: wbFields, children, bodyId: fc.constantFrom("absent", "absent", "same", "other") }) },
  { weight: 30, arbitrary: fc.record({ op: fc.constantFrom("getWb" as const, "deleteWb" as const), target }) },
  { weight: 30, arbitrary: fc.record({ op: fc.constantFrom("listWb" as const, "listEdges" as const), query }) },
  { weight: 10, arbitrary: fc.record({ op: s("getEdge"), target }) },
  { weight: 10, arbitrary: fc.record({ op: s("getRoute"), route }) },
  { weight: 50, arbitrary: fc.record({ op: s("putSaml"), route, fields: samlFields, shape: moduleShape }) },
  { weight: 50, arbitrary: fc.record({ op: s("putCircuitBreaker"), route, fields: circuitBreakerFields, shape: moduleShape }) },
  { weight: 20, arbitrary: fc.record({ op: s("getModule"), kind: fc.constantFrom("saml" as const, "circuit_breaker" as const), route }) },
  { weight: 10, arbitrary: fc.record({ op: s("deleteModule"), kind: s("circuit_breaker"), route }) },
  { weight: 1, arbitrary: fc.record({ op: s("deleteModule"), kind: s("saml"), route }) },
  { weight: 20, arbitrary: fc.record({ op: s("odd"), kind: fc.constantFrom(...ODD_KINDS) }) },
);
