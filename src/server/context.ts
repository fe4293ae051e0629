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
}

export interface Reply {
  status: number;
  /** A JSON-serialisable value; undefined for an empty body (204). */
  body?: unknown;
}

export type Handler = (server: ServerContext, tx: StoreTx, request: RequestContext) => Promise<Reply>;
