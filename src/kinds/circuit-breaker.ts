/**
 * The circuit breaker module of an HTTPS edge route: its client-settable fields and defaults (docs/api.md section 4).
 * Pure.
 */
import { CIRCUIT_BREAKER_DEFAULTS, CircuitBreakerSettingsSchema, type CircuitBreakerSettings } from "../model/wire.js";
import type { ModuleKindSpec } from "./module.js";

export const CIRCUIT_BREAKER: ModuleKindSpec<CircuitBreakerSettings> = {
  kind: "circuit_breaker",
  label: "circuit breaker",
  fields: Object.keys(CircuitBreakerSettingsSchema.shape) as Array<keyof CircuitBreakerSettings>,
  defaults: CIRCUIT_BREAKER_DEFAULTS,
};
