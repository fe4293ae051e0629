/**
 * The circuit breaker module of an HTTPS edge route: its client-settable fields and defaults (docs/api.md section 4).
 * Pure.
 */
import { CIRCUIT_BREAKER_DEFAULTS, CIRCUIT_BREAKER_FIELDS, type CircuitBreakerSettings } from "../model/wire.js";
import type { ModuleKindSpec } from "./module.js";

export const CIRCUIT_BREAKER: ModuleKindSpec<CircuitBreakerSettings> = {
  kind: "circuit_breaker",
  label: "circuit breaker",
  fields: CIRCUIT_BREAKER_FIELDS,
  defaults: CIRCUIT_BREAKER_DEFAULTS,
};
