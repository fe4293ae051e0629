/**
 * Reading an HTTP answer's body without trusting its size: an API (or a metrics endpoint) that sends more than any
 * answer it has a reason to send, or never stops, is cut off at a bound instead of filling the memory.
 */

/** The code of the error an answer over its bound throws (src/api/retry.ts says what it means). */
export const ANSWER_TOO_LARGE = "EDGEPLAN_ANSWER_TOO_LARGE";

/** The bound of an API's answers: a list page of 100 objects, or an edge whose routes hold SAML metadata, is far below it. */
export const MAX_API_ANSWER_BYTES = 64 * 1024 * 1024;

/** The body as UTF-8 text; throws an error with code `ANSWER_TOO_LARGE` once it passes `maxBytes` (the rest is not read). */
export async function readBodyText(body: AsyncIterable<Uint8Array> & { destroy(err?: Error): unknown }, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      const err = Object.assign(new Error(`the answer is larger than ${maxBytes} bytes`), { code: ANSWER_TOO_LARGE });
      body.destroy();
      throw err;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
