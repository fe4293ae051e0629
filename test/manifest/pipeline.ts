/**
 * The loader's pure steps run on YAML text, without a disk: parse, interpolate, check, build. SAML modules take their
 * IdP metadata inline (files need the disk; load.test.ts covers them).
 */
import { buildDesired, type SamlSource } from "../../src/manifest/build-desired.js";
import type { CheckedDocument } from "../../src/manifest/check-document.js";
import { checkManifestText, emptyCheckedTexts } from "../../src/manifest/check-text.js";
import type { VarSource } from "../../src/manifest/interpolate.js";
import { formatDiagnostic } from "../../src/model/errors.js";
import type { DesiredState } from "../../src/model/state.js";

export const EDGE = "edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU";
export const ROUTE = "edghtsrt_2rFLrPDVjzfYgym9MMvkYSSNdqk";
export const ROUTE2 = "edghtsrt_2rFLw8K9OzAhCLBsJjHY7ISpZ8a";
export const CHILD1 = "bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR";
export const CHILD2 = "bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq";
export const WEIGHTED = "bkdwd_2rFNa8x3kQvT0pLmZc4Yb7HdE1s";
export const IDP_XML =
  '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com">' +
  '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>';

/** Runs the pure steps of the loader over one manifest text named `m.yaml`. */
export function desiredOf(text: string, env: Record<string, string> = {}, vars: VarSource = null): { desired: DesiredState; messages: string[] } {
  const checked = emptyCheckedTexts();
  const { diagnostics, documents, declaredNames, references } = checked;
  const samlSources = new Map<CheckedDocument, SamlSource | undefined>();
  for (const doc of checkManifestText(text, "m.yaml", env, checked, vars)) {
    const saml = doc.kind === "EdgeRoute" ? doc.value.saml : undefined;
    if (saml !== undefined && saml !== "absent" && saml.idp_metadata !== undefined) samlSources.set(doc, { text: saml.idp_metadata });
  }
  const built = buildDesired({ documents, declaredNames, references, samlSources });
  diagnostics.push(...built.diagnostics);
  return { desired: built.desired, messages: diagnostics.map(formatDiagnostic) };
}
