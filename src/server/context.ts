/**
 * What a request handler receives and returns. Handlers are plain functions of (server, request) to a reply;
 * app.ts does the HTTP around them (auth, version, body, errors, faults, logging).
 */
import type { SigningKeyPair } from "./saml-certificate.js";
import type { Store } from "./store.js";
import type { JsonObject } from "./validate.js";

export interface ServerContext {
  store: Store;
  /** Base of every `uri` the server writes, without a trailing slash. */
  baseUrl: string;
  /** Base of the generated SAML service-provider URLs, without a trailing slash. */
  spBase: string;
  makeSigningKeyPair(entityId: string): Promise<SigningKeyPair>;
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

export type Handler = (server: ServerContext, request: RequestContext) => Reply | Promise<Reply>;
