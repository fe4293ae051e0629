/**
 * IdP metadata of the SAML module: reading `idp_metadata_file` without letting a manifest reach outside its root,
 * and checking the XML the way the API will (well-formed, an EntityDescriptor with an IDPSSODescriptor), plus a
 * warning the API does not give: an expired signing certificate.
 */
import { X509Certificate } from "node:crypto";
import { realpath, stat, readFile } from "node:fs/promises";
import path from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { fileErrorReason } from "../model/errors.js";
import { LIMITS } from "../model/wire.js";
import { insideGitFolder } from "../model/confine.js";
import { inside } from "./walk.js";
import { firstInvalidUtf8, lineColOf, lineColOfByte } from "./yaml-source.js";

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

/** The `CN=...` of a certificate's subject, for messages. */
function commonName(subject: string): string {
  const cn = subject.split("\n").find((l) => l.startsWith("CN="));
  return cn ?? subject.split("\n")[0] ?? "";
}

/**
 * Offsets of the signing certificates (text of `X509Certificate` in a `KeyDescriptor` with use="signing" or no use)
 * from the first IDPSSODescriptor on, in document order: the parser gives no positions, and the same certificate
 * often appears earlier in the file too (Microsoft Entra ID repeats it in every RoleDescriptor).
 */
function signingCertificateOffsets(text: string): number[] {
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

/**
 * Checks IdP metadata XML. Errors are what the API refuses (not well-formed, a root other than EntityDescriptor in
 * any namespace prefix, no IDPSSODescriptor) and a DOCTYPE, which IdP metadata never needs and entity expansion
 * attacks do. A signing certificate (`KeyDescriptor` with use="signing" or no use) that expired before `now`, or
 * that cannot be read, is a warning. Never throws for bad input.
 */
export function checkIdpMetadataXml(xml: string, now: Date): XmlProblem[] {
  const text = xml.startsWith("\uFEFF") ? xml.slice(1) : xml;
  const pem = /^\s*-----BEGIN ([A-Z0-9 ]+)-----/.exec(text);
  if (pem) {
    return [
      {
        severity: "error",
        ...lineColOf(text, pem[0].indexOf("-")),
        message:
          `IdP metadata is a PEM file (${pem[1]}), not the IdP's SAML metadata XML; the signing certificate is part of the metadata: ` +
          "download the IdP's metadata (an XML EntityDescriptor) and name that file",
      },
    ];
  }
  const doctype = text.search(/<!DOCTYPE/i);
  if (doctype >= 0) {
    return [
      {
        severity: "error",
        ...lineColOf(text, doctype),
        message: "IdP metadata holds a DOCTYPE, whose entity declarations can expand without bound; IdP metadata never needs one: remove it",
      },
    ];
  }
  const parsed = parseXml(text);
  if (!("node" in parsed)) return [parsed.problem];
  const rootStart = text.search(/<[^?!]/);
  const rootPos = rootStart >= 0 ? lineColOf(text, rootStart) : {};
  const descriptors = idpDescriptors(parsed.node, rootPos);
  if (!Array.isArray(descriptors)) return [descriptors];
  return checkSigningCertificates(text, descriptors, rootPos, now);
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
function signingCertificates(descriptors: unknown[]): string[] {
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

/** Warnings for signing certificates that cannot be read or expired before `now`. */
function checkSigningCertificates(text: string, descriptors: unknown[], rootPos: { line?: number; col?: number }, now: Date): XmlProblem[] {
  const problems: XmlProblem[] = [];
  const offsets = signingCertificateOffsets(text);
  signingCertificates(descriptors).forEach((b64, i) => {
    const at = offsets[i];
    const pos = at !== undefined ? lineColOf(text, at) : rootPos;
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(Buffer.from(b64.replace(/\s+/g, ""), "base64"));
    } catch {
      problems.push({ severity: "warning", ...pos, message: "a signing certificate of the IdP metadata cannot be read as X.509 (base64 DER); check the metadata" });
      return;
    }
    const validTo = new Date(cert.validTo);
    if (Number.isFinite(validTo.getTime()) && validTo.getTime() < now.getTime()) {
      problems.push({
        severity: "warning",
        ...pos,
        message:
          `the IdP's signing certificate ${commonName(cert.subject)} expired on ${validTo.toISOString().replace(".000Z", "Z")}; ` +
          "logins signed with it may be refused: download fresh metadata from the IdP",
      });
    }
  });
  return problems;
}

/** Outcome of reading `idp_metadata_file`: the text, or one error about the reference itself. */
export type IdpFileResult =
  | { ok: true; text: string; absPath: string }
  | { ok: false; message: string /** set when the problem is inside the file (invalid UTF-8) */; absPath?: string; line?: number; col?: number };

/**
 * Reads the IdP metadata file a manifest names. `ref` is relative to the manifest's folder; the file must stay in
 * `root` both as written (no absolute path, no `..` escape) and once symbolic links are resolved (realpath of both
 * sides). Its bytes are decoded as UTF-8 without any trimming or BOM removal, so what is sent is what git holds.
 */
export async function readIdpMetadataFile(ref: string, manifestPath: string, root: string, rootDisplay: string): Promise<IdpFileResult> {
  const field = "saml.idp_metadata_file";
  const inRoot = `the manifest root ${rootDisplay === "." ? "./" : `${rootDisplay}/`}`;
  if (ref === "") return { ok: false, message: `${field} is empty; give the path of the IdP metadata file, relative to this manifest` };
  if (path.isAbsolute(ref) || /^[A-Za-z]:[\\/]/.test(ref)) {
    return { ok: false, message: `${field} ${ref} is an absolute path; give a path relative to this manifest, inside ${inRoot}` };
  }
  const absPath = path.resolve(path.dirname(manifestPath), ref);
  if (!inside(root, absPath)) {
    return { ok: false, message: `${field} ${ref} leads outside ${inRoot}; keep IdP metadata files inside the folder given to edgeplan` };
  }
  let bytes: Buffer;
  try {
    // Every step may fail (a dangling link, a loop of links, a file that cannot be read): each is said at the reference.
    const real = await realpath(absPath);
    const realRoot = await realpath(root);
    if (!inside(realRoot, real)) {
      return { ok: false, message: `${field} ${ref} is a symbolic link that leads outside ${inRoot}; copy the file into the manifest root instead` };
    }
    if (insideGitFolder(path.relative(realRoot, real))) {
      return { ok: false, message: `${field} ${ref} leads into .git/, which holds no IdP metadata; name the XML file itself` };
    }
    const info = await stat(real);
    if (!info.isFile()) return { ok: false, message: `${field} ${ref} is not a file; name the XML file itself` };
    if (info.size > LIMITS.idpMetadataBytes) {
      return {
        ok: false,
        message: `${field} ${ref} is ${info.size} bytes, more than the ${LIMITS.idpMetadataBytes} bytes (128 KiB) the API accepts; use the IdP's metadata for one entity`,
      };
    }
    bytes = await readFile(real);
  } catch (e) {
    const why = fileErrorReason(e);
    const advice = why === "no such file" ? "check the path (it is relative to this manifest)" : why === "permission denied" ? "check its permissions" : "fix the path";
    return { ok: false, message: `${field} ${ref}: ${why}; ${advice}` };
  }
  if (bytes.length > LIMITS.idpMetadataBytes) {
    return { ok: false, message: `${field} ${ref} is ${bytes.length} bytes, more than the ${LIMITS.idpMetadataBytes} bytes (128 KiB) the API accepts` };
  }
  try {
    return { ok: true, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes), absPath };
  } catch {
    return { ok: false, absPath, ...lineColOfByte(bytes, firstInvalidUtf8(bytes)), message: "IdP metadata file is not valid UTF-8 text; save it as UTF-8" };
  }
}
