/**
 * `utf8Bytes` counts what the API's byte limits count: the length of the text encoded as UTF-8, as TextEncoder
 * writes it, lone surrogates included.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../../src/model/wire.js";

const encoded = (s: string): number => new TextEncoder().encode(s).length;

describe("utf8Bytes", () => {
  it("counts 1, 2, 3 and 4 byte characters and lone surrogates as TextEncoder does", () => {
    for (const s of ["", "a", "é", "€", "😀", "a😀b", "\ud800", "\udc00", "\ud800a", "a\udc00\ud800", "\ud83d\ude00\ud83d"]) {
      expect(utf8Bytes(s), JSON.stringify(s)).toBe(encoded(s));
    }
  });

  it("agrees with TextEncoder on any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }), (a, b) => {
        expect(utf8Bytes(a + b)).toBe(encoded(a + b));
      }),
      { numRuns: 500 },
    );
  });
});
