/**
 * An answer in the API's error shape (docs/api.md "Error body"), thrown by request handlers and turned into a
 * response in one place (app.ts). It never leaves the server.
 */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    /** `ERR_NGROK_*`; undefined for the bare 404/405 shape of unknown paths and methods. */
    readonly code: string | undefined,
    msg: string,
    readonly details: Record<string, string> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(msg);
  }
}

/** 400 with `code`, naming the offending field in `details.field`. */
export function fieldError(code: string, field: string, msg: string): HttpError {
  return new HttpError(400, code, msg, { field });
}

/** 400 ERR_NGROK_215: a value of the wrong type or out of range. */
export function invalidField(field: string, msg: string): HttpError {
  return fieldError("ERR_NGROK_215", field, `${field}: ${msg}`);
}

/** 404 ERR_NGROK_404 naming the missing resource in `details.resource`. */
export function notFound(what: string, id: string, msg = `${what} ${id} was not found in this account; check the id`): HttpError {
  return new HttpError(404, "ERR_NGROK_404", msg, { resource: id });
}

/** Describes a JSON value's type for messages: `a string`, `an array`, `null`. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "number") return `the number ${value}`;
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return `${value}`;
  return typeof value;
}
