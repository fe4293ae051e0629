/**
 * The SAML request-signing certificate of a route: an RSA-2048 key, a self-signed X.509 certificate with SHA-256, subject
 * and issuer CN = the SP entity id, valid for 35 years, key usage digitalSignature.
 *
 * Key generation and signing go through WebCrypto, which runs on libuv's thread pool: the event loop keeps
 * answering other requests while a key is made. @peculiar/x509 v2 resolves its algorithm providers through
 * tsyringe, which needs the Reflect metadata API; `reflect-metadata` provides it and must load first, so both are
 * imported here, lazily, in that order (a server that never sets a SAML module never loads them).
 */
import { randomBytes, webcrypto } from "node:crypto";

type X509 = typeof import("@peculiar/x509");

let library: Promise<X509> | undefined;

function loadX509(): Promise<X509> {
  library ??= (async () => {
    await import("reflect-metadata");
    const x509 = await import("@peculiar/x509");
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<X509["cryptoProvider"]["set"]>[0]);
    return x509;
  })();
  return library;
}

const ALGORITHM = {
  name: "RSASSA-PKCS1-v1_5",
  hash: "SHA-256",
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

export const CERTIFICATE_YEARS = 35;

/** The end of the queue of certificates being made: each starts when the one before has ended. */
let making: Promise<unknown> = Promise.resolve();

/**
 * Makes a new key pair and returns its self-signed certificate (PEM) for `entityId`, valid from now (second
 * precision) for 35 years. The private key only signs the certificate and is dropped: the server signs nothing
 * else with it, so it is never stored.
 *
 * One certificate is made at a time in a process: an RSA key keeps a core busy for tens of milliseconds, and
 * several at once on libuv's threads would take every core from the event loop that answers all other requests.
 */
export function makeSigningCertificate(entityId: string, now: Date = new Date()): Promise<string> {
  const made = making.then(
    () => makeNow(entityId, now),
    () => makeNow(entityId, now),
  );
  making = made.catch(() => undefined);
  return made;
}

async function makeNow(entityId: string, now: Date): Promise<string> {
  const x509 = await loadX509();
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, false, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  // @peculiar/x509 is typed against the DOM's CryptoKey; node's is the same object at run time.
  type DomKey = Parameters<X509["SubjectKeyIdentifierExtension"]["create"]>[0];
  const publicKey = keys.publicKey as unknown as DomKey;
  const privateKey = keys.privateKey as unknown as DomKey;
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CERTIFICATE_YEARS);
  // A positive serial: 16 random bytes with the top bit cleared (RFC 5280 section 4.1.2.2).
  const serial = randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f;
  const name = [{ CN: [entityId] }];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString("hex"),
    subject: name,
    issuer: name,
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    publicKey,
    signingKey: privateKey,
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.BasicConstraintsExtension(false, undefined, true),
      await x509.SubjectKeyIdentifierExtension.create(publicKey),
    ],
  });
  return cert.toString("pem") + "\n";
}
