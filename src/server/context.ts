/**
 * What a request handler receives and returns. Handlers are functions of (server, transaction, request) to a
 * reply; app.ts does the HTTP around them (auth, version, body, errors, faults, logging) and runs each request in
 * one store transaction, committed before the answer is sent. Handlers do not know which store they use.
 */
import type { StoreTx } from "./store.js";
import type { JsonObject } from "./validate.js";

export interface ServerContext {
  /** Base of every `uri` the server writes, without a trailing slash. */
  baseUrl: string;
  /** Base of the generated SAML service-provider URLs, without a trailing slash. */
  spBase: string;
  /** A new self-signed request-signing certificate (PEM) for a SAML service provider; its key is not kept. */
  makeSigningCertificate(entityId: string): Promise<string>;
}

export interface RequestContext {
  account: string;
  /** The ids captured from the path, in order. */
  params: string[];
  /** The raw query string (after `?`), "" when none. */
  query: string;
  /** The parsed JSON body of PUT, POST and PATCH; undefined for GET and DELETE. */
  body: JsonObject | undefined;
  /**
   * A request-signing certificate made for this request outside any transaction, after a first run of the handler
   * threw `CertificateNeeded`; undefined on a first run.
   */
  signingCertificate?: string;
}

/**
 * Thrown by a handler that needs a new request-signing certificate for `entityId` and was not given one. Making its
 * key pair takes tens of milliseconds, which no transaction should hold (SQLite runs them one at a time): the
 * pipeline rolls this one back, makes the certificate outside, and runs the handler again, in a new transaction,
 * with it in `signingCertificate`. That run decides afresh whether the certificate is needed.
 */
export class CertificateNeeded extends Error {
  override name = "CertificateNeeded";
  constructor(readonly entityId: string) {
    super(`a request-signing certificate for ${entityId} is needed`);
  }
}

export interface Reply {
  status: number;
  /** A JSON-serialisable value; undefined for an empty body (204). */
  body?: unknown;
}

export type Handler = (server: ServerContext, tx: StoreTx, request: RequestContext) => Promise<Reply>;
