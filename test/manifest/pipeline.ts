/**
 * The loader's pure steps run on YAML text, without a disk: parse, interpolate, check, build. SAML modules take their
 * IdP metadata inline (files need the disk; load.test.ts covers them).
 */
import { buildDesired, type SamlSource } from "../../src/manifest/build-desired.js";
import { Pinner, checkDocument, type CheckedDocument } from "../../src/manifest/check-document.js";
import { interpolateDocument } from "../../src/manifest/interpolate.js";
import { parseManifestText, toPlain } from "../../src/manifest/yaml-source.js";
import { formatDiagnostic, type Diagnostic } from "../../src/model/errors.js";
import type { DesiredState, SourcePos } from "../../src/model/state.js";

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
export function desiredOf(text: string, env: Record<string, string> = {}): { desired: DesiredState; messages: string[] } {
  const diagnostics: Diagnostic[] = [];
  const parsed = parseManifestText(text, "m.yaml");
  diagnostics.push(...parsed.diagnostics);
  const documents: CheckedDocument[] = [];
  const declaredNames: Array<{ name: string; pos: SourcePos }> = [];
  const references: Array<{ key: string; pos: SourcePos }> = [];
  const samlSources = new Map<CheckedDocument, SamlSource | undefined>();
  for (const d of parsed.docs) {
    const interpolation = interpolateDocument(d, env);
    diagnostics.push(...interpolation.diagnostics);
    const plain = toPlain(d);
    if ("diagnostic" in plain) {
      diagnostics.push(plain.diagnostic);
      continue;
    }
    const result = checkDocument(d, plain.value, interpolation.unresolved);
    diagnostics.push(...result.diagnostics);
    const pin = new Pinner(d);
    if (result.name !== undefined) declaredNames.push({ name: result.name, pos: pin.value(["name"]) });
    for (const key of result.references ?? []) references.push({ key, pos: pin.key(["backends", key]) });
    if (!result.checked) continue;
    documents.push(result.checked);
    const saml = result.checked.kind === "EdgeRoute" ? result.checked.value.saml : undefined;
    if (saml !== undefined && saml !== "absent" && saml.idp_metadata !== undefined) samlSources.set(result.checked, { text: saml.idp_metadata });
  }
  const built = buildDesired({ documents, declaredNames, references, samlSources });
  diagnostics.push(...built.diagnostics);
  return { desired: built.desired, messages: diagnostics.map(formatDiagnostic) };
}
