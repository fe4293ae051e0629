/**
 * The SAML module of an HTTPS edge route: its client-settable fields and defaults (docs/api.md section 3), the auth
 * question the risks ask of it, and the outputs a person copies into the IdP. Pure.
 */
import type { ModuleSettings } from "../model/plan.js";
import { SAML_DEFAULTS, SAML_FIELDS, type SamlSettings } from "../model/wire.js";
import type { ModuleKindSpec } from "./module.js";

export const SAML: ModuleKindSpec<SamlSettings> = {
  kind: "saml",
  label: "SAML",
  fields: SAML_FIELDS,
  defaults: SAML_DEFAULTS,
};

/** Whether SAML settings require a login: the module exists and is enabled. */
export function samlEnforced(settings: ModuleSettings | null): boolean {
  return settings !== null && settings.enabled !== false;
}
