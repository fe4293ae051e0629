/**
 * SAML IdP metadata as XML, read the one way both sides read it: the API's check of a module's `idp_metadata`
 * (well-formed XML whose one root is an `EntityDescriptor`, in any namespace prefix, with an `IDPSSODescriptor`), and
 * the signing certificates in it, which the loader checks further. Entities are not expanded and nothing is fetched,
 * so hostile XML costs one linear pass. Pure.
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { lineColOf } from "../model/errors.js";

/** A problem in IdP metadata, with its line and column in the XML when it points at a place there. */
export interface XmlProblem {
  severity: "error" | "warning";
  message: string;
  /** 1-based line and column in the XML, when known. */
  line?: number;
  col?: number;
}

type XmlNode = Record<string, unknown>;

const asArray = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const textOf = (v: unknown): string | undefined =>
  typeof v === "string" ? v : typeof v === "object" && v !== null && typeof (v as XmlNode)["#text"] === "string" ? ((v as XmlNode)["#text"] as string) : undefined;
const children = (node: unknown, name: string): unknown[] => (typeof node === "object" && node !== null ? asArray((node as XmlNode)[name]) : []);

/**
 * The IDPSSODescriptors of IdP metadata, with the place of its root element, or the one error that says why the
 * API refuses it (not well-formed, not one EntityDescriptor root, no IDPSSODescriptor). Never throws.
 */
export function readIdpMetadata(text: string): { descriptors: unknown[]; rootPos: { line?: number; col?: number } } | { problem: XmlProblem } {
  const parsed = parseXml(text);
  if (!("node" in parsed)) return parsed;
  const rootStart = text.search(/<[^?!]/);
  const rootPos = rootStart >= 0 ? lineColOf(text, rootStart) : {};
  const descriptors = idpDescriptors(parsed.node, rootPos);
  return Array.isArray(descriptors) ? { descriptors, rootPos } : { problem: descriptors };
}

/** The API's verdict on a module's `idp_metadata`: undefined when it takes it, else the sentence that says why not. */
export function idpMetadataProblem(xml: string): string | undefined {
  const read = readIdpMetadata(xml);
  if (!("problem" in read)) return undefined;
  const { message, line, col } = read.problem;
  return line === undefined ? message : `${message} (line ${line}, column ${col ?? 1})`;
}

/** The parsed document, or the one error that says why it cannot be read. */
function parseXml(text: string): { node: XmlNode } | { problem: XmlProblem } {
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    const { msg, line, col } = valid.err;
    const message = `IdP metadata is not well-formed XML: ${msg.replace(/\.$/, "")}; use the metadata file exactly as the IdP publishes it`;
    return { problem: { severity: "error", ...(typeof line === "number" ? { line, col: typeof col === "number" ? col : 1 } : {}), message } };
  }
  try {
    const parser = new XMLParser({
      ignoreAttributes: false,
      attributeNamePrefix: "@_",
      removeNSPrefix: true,
      processEntities: false,
      parseTagValue: false,
      parseAttributeValue: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
    });
    return { node: parser.parse(text) as XmlNode };
  } catch (err) {
    // The parser refuses what the validator lets through, e.g. elements nested deeper than it allows (100 levels):
    // a hostile file must end as a diagnostic, never as an internal error.
    const why = err instanceof Error ? err.message : String(err);
    const message = /nested tags/i.test(why)
      ? "IdP metadata nests elements more than 100 levels deep, which no IdP metadata does; use the metadata file exactly as the IdP publishes it"
      : `IdP metadata cannot be read: ${why.replace(/\.$/, "")}; use the metadata file exactly as the IdP publishes it`;
    return { problem: { severity: "error", message } };
  }
}

/** The IDPSSODescriptors of the one EntityDescriptor root, or the error about the root. */
function idpDescriptors(parsed: XmlNode, rootPos: { line?: number; col?: number }): unknown[] | XmlProblem {
  const roots = Object.keys(parsed).filter((k) => !k.startsWith("?") && !k.startsWith("#"));
  const rootCount = roots.reduce((n, k) => n + asArray(parsed[k]).length, 0);
  if (rootCount !== 1) {
    return { severity: "error", ...rootPos, message: "IdP metadata must have exactly one root element, an EntityDescriptor; use the metadata file the IdP publishes" };
  }
  const rootName = roots[0] ?? "";
  if (rootName !== "EntityDescriptor") {
    const message =
      `IdP metadata's root element is ${rootName}, not an EntityDescriptor; give the EntityDescriptor of one IdP` +
      (rootName === "EntitiesDescriptor" ? " (take it out of the EntitiesDescriptor aggregate)" : "");
    return { severity: "error", ...rootPos, message };
  }
  const descriptors = children(parsed[rootName], "IDPSSODescriptor");
  if (descriptors.length === 0) {
    return {
      severity: "error",
      ...rootPos,
      message: "IdP metadata has no IDPSSODescriptor: it does not describe an identity provider (is it a service provider's metadata?); use the IdP's metadata",
    };
  }
  return descriptors;
}

/** The base64 text of every signing certificate (KeyDescriptor use="signing" or no use), in document order. */
export function signingCertificates(descriptors: unknown[]): string[] {
  const out: string[] = [];
  for (const descriptor of descriptors) {
    for (const kd of children(descriptor, "KeyDescriptor")) {
      const use = typeof kd === "object" && kd !== null ? (kd as XmlNode)["@_use"] : undefined;
      if (use !== undefined && use !== "signing") continue;
      for (const ki of children(kd, "KeyInfo")) {
        for (const xd of children(ki, "X509Data")) {
          for (const c of children(xd, "X509Certificate")) {
            const b64 = textOf(c);
            if (b64 !== undefined) out.push(b64);
          }
        }
      }
    }
  }
  return out;
}

/**
 * Offsets of the signing certificates (text of `X509Certificate` in a `KeyDescriptor` with use="signing" or no use)
 * from the first IDPSSODescriptor on, in document order: the parser gives no positions, and the same certificate
 * often appears earlier in the file too (Microsoft Entra ID repeats it in every RoleDescriptor).
 */
export function signingCertificateOffsets(text: string): number[] {
  const start = text.search(/<(?:[\w.-]+:)?IDPSSODescriptor[\s>/]/);
  if (start < 0) return [];
  const offsets: number[] = [];
  const block = /<(?:[\w.-]+:)?KeyDescriptor\b([^>]*)>([\s\S]*?)<\/(?:[\w.-]+:)?KeyDescriptor\s*>/g;
  block.lastIndex = start;
  for (let m = block.exec(text); m !== null; m = block.exec(text)) {
    const use = /\buse\s*=\s*["']([^"']*)["']/.exec(m[1] ?? "")?.[1];
    if (use !== undefined && use !== "signing") continue;
    const inner = m[2] ?? "";
    const innerStart = m.index + m[0].indexOf(inner, m[0].indexOf(">") + 1);
    const cert = /<(?:[\w.-]+:)?X509Certificate\b[^>]*>(\s*)/g;
    for (let c = cert.exec(inner); c !== null; c = cert.exec(inner)) offsets.push(innerStart + c.index + c[0].length);
  }
  return offsets;
}
