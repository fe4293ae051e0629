/**
 * IdP metadata of the SAML module: reading `idp_metadata_file` without letting a manifest reach outside its root,
 * and checking the XML the way the API will (src/kinds/saml-metadata.ts), plus what the API does not check: a PEM
 * file named by mistake, a DOCTYPE, and a warning for an expired signing certificate.
 */
import { X509Certificate } from "node:crypto";
import { realpath, stat, readFile } from "node:fs/promises";
import path from "node:path";
import { readIdpMetadata, signingCertificateOffsets, signingCertificates, type XmlProblem } from "../kinds/saml-metadata.js";
import { fileErrorReason, lineColOf } from "../model/errors.js";
import { LIMITS } from "../model/wire.js";
import { insideGitFolder } from "../model/confine.js";
import { inside } from "./walk.js";
import { firstInvalidUtf8, lineColOfByte } from "./yaml-source.js";

/** The `CN=...` of a certificate's subject, for messages. */
function commonName(subject: string): string {
  const cn = subject.split("\n").find((l) => l.startsWith("CN="));
  return cn ?? subject.split("\n")[0] ?? "";
}

/**
 * Checks IdP metadata XML. Errors are what the API refuses (not well-formed, a root other than EntityDescriptor in
 * any namespace prefix, no IDPSSODescriptor) and a DOCTYPE, which IdP metadata never needs and entity expansion
 * attacks do. A signing certificate (`KeyDescriptor` with use="signing" or no use) that expired before `now`, or
 * that cannot be read, is a warning. Never throws for bad input.
 */
export function checkIdpMetadataXml(xml: string, now: Date): XmlProblem[] {
  const text = xml.startsWith("\uFEFF") ? xml.slice(1) : xml;
  const error = (offset: number, message: string): XmlProblem[] => [{ severity: "error", ...lineColOf(text, offset), message }];
  const pem = /^\s*-----BEGIN ([A-Z0-9 ]+)-----/.exec(text);
  if (pem) {
    const notXml = `IdP metadata is a PEM file (${pem[1]}), not the IdP's SAML metadata XML; the signing certificate is part of the metadata`;
    return error(pem[0].indexOf("-"), `${notXml}: download the IdP's metadata (an XML EntityDescriptor) and name that file`);
  }
  const doctype = text.search(/<!DOCTYPE/i);
  if (doctype >= 0) return error(doctype, "IdP metadata holds a DOCTYPE, whose entity declarations can expand without bound; IdP metadata never needs one: remove it");
  const read = readIdpMetadata(text);
  if ("problem" in read) return [read.problem];
  return checkSigningCertificates(text, read.descriptors, read.rootPos, now);
}

/** Warnings for signing certificates that cannot be read or expired before `now`. */
function checkSigningCertificates(text: string, descriptors: unknown[], rootPos: { line?: number; col?: number }, now: Date): XmlProblem[] {
  const offsets = signingCertificateOffsets(text);
  return signingCertificates(descriptors).flatMap((b64, i): XmlProblem[] => {
    const at = offsets[i];
    const pos = at !== undefined ? lineColOf(text, at) : rootPos;
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(Buffer.from(b64.replace(/\s+/g, ""), "base64"));
    } catch {
      return [{ severity: "warning", ...pos, message: "a signing certificate of the IdP metadata cannot be read as X.509 (base64 DER); check the metadata" }];
    }
    const validTo = new Date(cert.validTo);
    if (!(Number.isFinite(validTo.getTime()) && validTo.getTime() < now.getTime())) return [];
    const expired = `the IdP's signing certificate ${commonName(cert.subject)} expired on ${validTo.toISOString().replace(".000Z", "Z")}`;
    return [{ severity: "warning", ...pos, message: `${expired}; logins signed with it may be refused: download fresh metadata from the IdP` }];
  });
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
  // What is wrong with the reference, said after it.
  const refuse = (problem: string): IdpFileResult => ({ ok: false, message: `${field} ${ref}${problem}` });
  const tooLarge = (size: number) => ` is ${size} bytes, more than the ${LIMITS.idpMetadataBytes} bytes (128 KiB) the API accepts`;
  if (ref === "") return { ok: false, message: `${field} is empty; give the path of the IdP metadata file, relative to this manifest` };
  if (path.isAbsolute(ref) || /^[A-Za-z]:[\\/]/.test(ref)) return refuse(` is an absolute path; give a path relative to this manifest, inside ${inRoot}`);
  const absPath = path.resolve(path.dirname(manifestPath), ref);
  if (!inside(root, absPath)) return refuse(` leads outside ${inRoot}; keep IdP metadata files inside the folder given to edgeplan`);
  let bytes: Buffer;
  try {
    // Every step may fail (a dangling link, a loop of links, a file that cannot be read): each is said at the reference.
    const real = await realpath(absPath);
    const realRoot = await realpath(root);
    if (!inside(realRoot, real)) return refuse(` is a symbolic link that leads outside ${inRoot}; copy the file into the manifest root instead`);
    if (insideGitFolder(path.relative(realRoot, real))) return refuse(" leads into .git/, which holds no IdP metadata; name the XML file itself");
    const info = await stat(real);
    if (!info.isFile()) return refuse(" is not a file; name the XML file itself");
    if (info.size > LIMITS.idpMetadataBytes) return refuse(`${tooLarge(info.size)}; use the IdP's metadata for one entity`);
    bytes = await readFile(real);
  } catch (e) {
    const why = fileErrorReason(e);
    const advice = why === "no such file" ? "check the path (it is relative to this manifest)" : why === "permission denied" ? "check its permissions" : "fix the path";
    return refuse(`: ${why}; ${advice}`);
  }
  if (bytes.length > LIMITS.idpMetadataBytes) return refuse(tooLarge(bytes.length));
  try {
    return { ok: true, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes), absPath };
  } catch {
    return { ok: false, absPath, ...lineColOfByte(bytes, firstInvalidUtf8(bytes)), message: "IdP metadata file is not valid UTF-8 text; save it as UTF-8" };
  }
}
