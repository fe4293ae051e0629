/** Which files of an existing folder an export may overwrite (`buildForeignFiles`): pure, with plain data. */
import { describe, expect, it } from "vitest";
import { buildForeignFiles, carriesExportHeader, type Existing } from "../../src/export/ownership.js";
import { EXPORT_HEADER } from "../../src/export/types.js";

const SCHEMA_LINE = "# yaml-language-server: $schema=../schemas/edge-route.schema.json";
const ROUTE = `${SCHEMA_LINE}\n${EXPORT_HEADER}\nkind: EdgeRoute\nsaml:\n  idp_metadata_file: idp/r1.xml\n`;
const FILES = [
  { path: "routes/e1.yaml", text: `${ROUTE}# new\n` },
  { path: "routes/idp/r1.xml", text: "<new/>" },
  { path: "schemas/edge-route.schema.json", text: "{}" },
];
const file = (text: string): Existing => ({ kind: "file", text });

describe("buildForeignFiles", () => {
  it("finds nothing in the way in an empty folder", () => {
    expect(buildForeignFiles(FILES, new Map())).toEqual([]);
  });

  it("overwrites an export's manifest, and the files that manifest refers to", () => {
    const existing = new Map<string, Existing>([
      ["routes/e1.yaml", file(ROUTE)],
      ["routes/idp/r1.xml", file("<old/>")],
      ["schemas/edge-route.schema.json", file('{"old": true}')],
    ]);
    expect(buildForeignFiles(FILES, existing)).toEqual([]);
  });

  it("names a manifest without the header, and what only such a manifest refers to", () => {
    const existing = new Map<string, Existing>([
      ["routes/e1.yaml", file(ROUTE.replace(`${EXPORT_HEADER}\n`, ""))],
      ["routes/idp/r1.xml", file("<old/>")],
      ["schemas/edge-route.schema.json", file("{}")],
    ]);
    // The schema holds what would be written: it is not in the way.
    expect(buildForeignFiles(FILES, existing)).toEqual(["routes/e1.yaml", "routes/idp/r1.xml"]);
  });

  it("names what is not a file", () => {
    expect(buildForeignFiles(FILES, new Map([["routes/idp/r1.xml", { kind: "other" }]]))).toEqual(["routes/idp/r1.xml"]);
  });
});

describe("carriesExportHeader", () => {
  it("looks at the leading comment lines only", () => {
    expect(carriesExportHeader(`${SCHEMA_LINE}\n${EXPORT_HEADER}\nkind: x\n`)).toBe(true);
    expect(carriesExportHeader(`${SCHEMA_LINE}\r\n${EXPORT_HEADER}\r\nkind: x\r\n`)).toBe(true);
    expect(carriesExportHeader(`kind: x\n${EXPORT_HEADER}\n`)).toBe(false);
    expect(carriesExportHeader(`# ${EXPORT_HEADER}\n`)).toBe(false);
  });
});
