/**
 * Reading and checking request bodies: size limit, content type, JSON, nesting depth (docs/api.md "bodies").
 */
import type { IncomingMessage } from "node:http";
import { nestsDeeperThan } from "../model/json-text.js";
import { describeType, HttpError } from "./http-error.js";
import { isPlainObject, type JsonObject } from "./validate.js";

const EMPTY = Buffer.alloc(0);
/** How much of an oversized body is read and thrown away so the 413 reaches the client; beyond it, the connection is cut. */
const DRAIN_MAX = 16 * 1024 * 1024;
/** Deepest nesting of objects and arrays a body may have; the API's own bodies need 3. */
export const MAX_JSON_DEPTH = 32;

export type BodyResult = { kind: "ok"; bytes: Buffer } | { kind: "too-large"; drained: boolean } | { kind: "aborted" };

/**
 * Reads the whole body, keeping at most `limit` bytes. A request without Content-Length and Transfer-Encoding
 * has no body and is answered without waiting for an event.
 */
export function readBody(req: IncomingMessage, limit: number): BodyResult | Promise<BodyResult> {
  const length = req.headers["content-length"];
  if (length === undefined && req.headers["transfer-encoding"] === undefined) return { kind: "ok", bytes: EMPTY };
  if (length === "0") return { kind: "ok", bytes: EMPTY };
  // A client that left while the request waited (injected latency, a full in-flight limit) has taken its body
  // with it: its stream is already closed, so waiting for `end` or `close` would wait forever.
  if (req.destroyed) return { kind: "aborted" };
  const declared = length === undefined ? NaN : Number(length);
  if (declared > DRAIN_MAX) return { kind: "too-large", drained: false };
  return new Promise<BodyResult>((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const settle = (r: BodyResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    req.on("data", (chunk: Buffer) => {
      total += chunk.length;
      if (total <= limit) chunks.push(chunk);
      else if (total > DRAIN_MAX) {
        req.pause();
        settle({ kind: "too-large", drained: false });
      }
    });
    req.on("end", () => {
      settle(total > limit ? { kind: "too-large", drained: true } : { kind: "ok", bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total) });
    });
    req.on("error", () => settle({ kind: "aborted" }));
    req.on("close", () => settle({ kind: "aborted" }));
  });
}

/**
 * The JSON object of a PUT, POST or PATCH body, from every Content-Type header the request carries. Throws 400
 * ERR_NGROK_216 (no content type), 415 ERR_NGROK_210 (another content type, or several: node would keep the first,
 * a proxy in front may have read another), 400 ERR_NGROK_213 (empty, not JSON, too deep, not an object).
 */
export function parseJsonBody(contentTypes: readonly string[] | undefined, bytes: Buffer): JsonObject {
  if (contentTypes !== undefined && contentTypes.length > 1) {
    throw new HttpError(415, "ERR_NGROK_210", `the request has ${contentTypes.length} Content-Type headers; send exactly one: Content-Type: application/json`);
  }
  const contentType = contentTypes?.[0];
  if (contentType === undefined || contentType.trim() === "") {
    throw new HttpError(400, "ERR_NGROK_216", "the request has no Content-Type header; send Content-Type: application/json");
  }
  const semicolon = contentType.indexOf(";");
  const media = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (media !== "application/json") {
    throw new HttpError(415, "ERR_NGROK_210", `the Content-Type ${JSON.stringify(media.slice(0, 100))} is not supported; send Content-Type: application/json`);
  }
  if (bytes.length === 0) throw new HttpError(400, "ERR_NGROK_213", "the body is empty; send a JSON object");
  const text = bytes.toString("utf8");
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new HttpError(400, "ERR_NGROK_213", `the body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, "ERR_NGROK_213", `the body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(value)) throw new HttpError(400, "ERR_NGROK_213", `the body must be a JSON object, got ${describeType(value)}`);
  return value;
}
