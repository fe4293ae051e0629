import { describe, expect, it } from "vitest";
import { closest, didYouMean, editDistance } from "../../src/model/suggest.js";
import { substitute } from "../../src/manifest/interpolate.js";
import { MAX_NESTING, decodeManifest, findExcessiveNesting, firstInvalidUtf8, parseManifestText } from "../../src/manifest/yaml-source.js";
import { lineColOf, sortDiagnostics } from "../../src/model/errors.js";
import { checkIdpMetadataXml } from "../../src/manifest/idp-metadata.js";
import { looksLikeManifest } from "../../src/manifest/load.js";
import { formatSummary } from "../../src/commands/validate.js";
import type { Diagnostic } from "../../src/model/errors.js";

describe("suggestions", () => {
  it("measure edit distance", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("same", "same")).toBe(0);
    expect(editDistance("abcdef", "uvwxyz", 2)).toBe(3);
  });

  it("suggest only close candidates, letter case aside", () => {
    expect(closest("descripton", ["name", "description"])).toBe("description");
    expect(closest("weightedbackend", ["WeightedBackend", "EdgeRoute"])).toBe("WeightedBackend");
    expect(closest("owner", ["name", "description", "backends"])).toBeUndefined();
    expect(closest("id", ["kind"])).toBeUndefined();
    expect(didYouMean("chekout", ["checkout", "storefront"])).toBe("; did you mean checkout?");
    expect(didYouMean("zzz", ["checkout"], "; nothing close")).toBe("; nothing close");
  });
});

describe("variable substitution", () => {
  const env = { EDGEPLAN_VAR_A: "alpha", EDGEPLAN_VAR_EMPTY: "", SECRET: "s3cr3t" };
  it("replaces EDGEPLAN_VAR_* and keeps the rest of the text", () => {
    expect(substitute("x-${EDGEPLAN_VAR_A}-${EDGEPLAN_VAR_A}!", env)).toEqual({ text: "x-alpha-alpha!", problems: [] });
    expect(substitute("[${EDGEPLAN_VAR_EMPTY}]", env)).toEqual({ text: "[]", problems: [] });
    expect(substitute("$5 and $HOME stay", env)).toEqual({ text: "$5 and $HOME stay", problems: [] });
  });

  it("writes $${ as a literal ${ without reading the variable", () => {
    expect(substitute("$${SECRET} $${EDGEPLAN_VAR_A}", env)).toEqual({ text: "${SECRET} ${EDGEPLAN_VAR_A}", problems: [] });
  });

  it("refuses other variables without reading them, and missing ones", () => {
    const refused = substitute("${SECRET}", env);
    expect(refused.problems).toEqual([
      "${SECRET}: only EDGEPLAN_VAR_* variables can be used, so that a manifest cannot read the runner's secrets; set EDGEPLAN_VAR_SECRET and write ${EDGEPLAN_VAR_SECRET}, or write $${SECRET} for the literal text",
    ]);
    expect(refused.text).not.toContain("s3cr3t");
    expect(substitute("${EDGEPLAN_VAR_B}", env).problems).toEqual([
      "${EDGEPLAN_VAR_B}: EDGEPLAN_VAR_B is not set; set it in edgeplan's environment, or write $${EDGEPLAN_VAR_B} for the literal text",
    ]);
  });
});

describe("hostile YAML", () => {
  it("finds nesting deeper than the limit in flow, block and compact styles, in linear time", () => {
    // The mapping of the line is one level, so the 64th "[" is the 65th level.
    expect(findExcessiveNesting("a: " + "[".repeat(MAX_NESTING) + "]".repeat(MAX_NESTING))).toBe(3 + MAX_NESTING - 1);
    expect(findExcessiveNesting("a: " + "[".repeat(MAX_NESTING - 1) + "]".repeat(MAX_NESTING - 1))).toBeUndefined();
    expect(findExcessiveNesting("- ".repeat(MAX_NESTING + 1) + "x\n")).toBeDefined();
    let block = "";
    for (let i = 0; i <= MAX_NESTING; i++) block += `${" ".repeat(i)}k${i}:\n`;
    expect(findExcessiveNesting(block)).toBeDefined();
    expect(findExcessiveNesting("[".repeat(1_000_000))).toBe(MAX_NESTING - 1);
  });

  it("leaves ordinary manifests alone, brackets in strings and block scalars included", () => {
    const text =
      'kind: WeightedBackend\nname: a\ndescription: "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["\nmetadata: |\n  ' +
      "{".repeat(100) +
      "\nbackends:\n  - - - x\n";
    expect(findExcessiveNesting(text)).toBeUndefined();
  });

  it("refuses big, binary and non-UTF-8 files before parsing", () => {
    const big = new Uint8Array(1024 * 1024 + 1).fill(0x61);
    expect(decodeManifest(big, "big.yaml")).toEqual({
      diagnostic: {
        severity: "error",
        pos: { file: "big.yaml", line: 1, col: 1 },
        message: "file is 1048577 bytes, more than the 1048576 bytes (1 MiB) a manifest file may hold; split it into several files",
      },
    });
    const binary = decodeManifest(new Uint8Array([0x61, 0x0a, 0x62, 0x00]), "b.yaml");
    expect("diagnostic" in binary && binary.diagnostic.pos).toEqual({ file: "b.yaml", line: 2, col: 2 });
    expect(decodeManifest(new TextEncoder().encode("kind: ü\n"), "ok.yaml")).toEqual({ text: "kind: ü\n" });
  });

  it("finds the first invalid UTF-8 sequence", () => {
    expect(firstInvalidUtf8(new TextEncoder().encode("aé€😀"))).toBe(10);
    expect(firstInvalidUtf8(new Uint8Array([0x61, 0xc3]))).toBe(1); // cut short
    expect(firstInvalidUtf8(new Uint8Array([0xc0, 0x80]))).toBe(0); // overlong
    expect(firstInvalidUtf8(new Uint8Array([0xed, 0xa0, 0x80]))).toBe(0); // surrogate
    expect(firstInvalidUtf8(new Uint8Array([0x61, 0xff]))).toBe(1);
    // A BOM and a U+FFFD written as such (EF BF BD) are valid text.
    expect(firstInvalidUtf8(new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xef, 0xbf, 0xbd, 0x62, 0xff]))).toBe(8);
  });

  it("skips empty documents and keeps the others with their positions", () => {
    const { docs, diagnostics } = parseManifestText("---\n# only a comment\n---\n---\nkind: EdgeRoute\n", "m.yaml");
    expect(diagnostics).toEqual([]);
    expect(docs.map((d) => d.pos)).toEqual([{ file: "m.yaml", line: 5, col: 1 }]);
  });
});

describe("IdP metadata XML", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  it("accepts an EntityDescriptor with an IDPSSODescriptor in any namespace prefix, or none", () => {
    for (const xml of [
      '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"><md:IDPSSODescriptor/></md:EntityDescriptor>',
      '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"><IDPSSODescriptor/></EntityDescriptor>',
      '\uFEFF<?xml version="1.0"?>\r\n<saml2md:EntityDescriptor xmlns:saml2md="urn:oasis:names:tc:SAML:2.0:metadata"><saml2md:IDPSSODescriptor/></saml2md:EntityDescriptor>',
    ]) {
      expect(checkIdpMetadataXml(xml, now)).toEqual([]);
    }
  });

  it("refuses two roots and text that is not XML", () => {
    expect(checkIdpMetadataXml("<a/><b/>", now)[0]?.message).toBe(
      "IdP metadata must have exactly one root element, an EntityDescriptor; use the metadata file the IdP publishes",
    );
    expect(checkIdpMetadataXml("https://idp.example.com/metadata", now)[0]).toMatchObject({ severity: "error", line: 1, col: 1 });
  });

  it("warns about a signing certificate it cannot read", () => {
    const xml =
      "<EntityDescriptor><IDPSSODescriptor>\n<KeyDescriptor><KeyInfo><X509Data><X509Certificate>bm90IGEgY2VydA==</X509Certificate></X509Data></KeyInfo></KeyDescriptor>" +
      "</IDPSSODescriptor></EntityDescriptor>";
    expect(checkIdpMetadataXml(xml, now)).toEqual([
      {
        severity: "warning",
        line: 2,
        col: 52,
        message: "a signing certificate of the IdP metadata cannot be read as X.509 (base64 DER); check the metadata",
      },
    ]);
  });

  it("counts lines and columns", () => {
    expect(lineColOf("ab\ncd\n", 4)).toEqual({ line: 2, col: 2 });
    expect(lineColOf("ab", 0)).toEqual({ line: 1, col: 1 });
  });
});

describe("loader helpers", () => {
  it("tell manifests from other YAML found in a folder", () => {
    expect(looksLikeManifest("kind: WeightedBackend\n")).toBe(true);
    expect(looksLikeManifest("# c\n---\napiVersion: edgeplan/v1\n")).toBe(true);
    expect(looksLikeManifest('{"kind": "EdgeRoute"}\n')).toBe(true);
    expect(looksLikeManifest("name: checkout\nbackends: {}\n")).toBe(true);
    expect(looksLikeManifest("edge: x\nroute: y\n")).toBe(true);
    expect(looksLikeManifest("edges:\n  - id: x\nbackends:\n  - {type: tunnel_group}\n")).toBe(false);
    expect(looksLikeManifest("name: plan\non: [pull_request]\njobs:\n  plan:\n    steps:\n      - with:\n          kind: x\n")).toBe(false);
  });

  it("sort diagnostics by file, line and column, keeping the order of equal positions, and drop repeats", () => {
    const d = (file: string, line: number, col: number, message: string): Diagnostic => ({ severity: "error", pos: { file, line, col }, message });
    const sorted = sortDiagnostics([
      d("b.yaml", 1, 1, "4"),
      d("a.yaml", 10, 1, "3"),
      d("a.yaml", 2, 5, "2"),
      d("a.yaml", 2, 5, "2"),
      d("a.yaml", 2, 1, "1"),
      d("a.yaml", 2, 5, "2b"),
    ]);
    expect(sorted.map((x) => x.message)).toEqual(["1", "2", "2b", "3", "4"]);
  });

  it("summarise with plurals", () => {
    const w: Diagnostic = { severity: "warning", pos: { file: "a", line: 1, col: 1 }, message: "w" };
    const e: Diagnostic = { ...w, severity: "error" };
    expect(formatSummary({ files: ["a", "b", "c"], objects: 5, skipped: [] }, [e, e, w])).toBe("3 files, 5 objects: 2 errors, 1 warning");
    expect(formatSummary({ files: ["a"], objects: 1, skipped: ["f.yaml"] }, [])).toBe(
      "1 file, 1 object: 0 errors, 0 warnings (1 YAML file without a kind skipped: not a manifest)",
    );
  });
});
