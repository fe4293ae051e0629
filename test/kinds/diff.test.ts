import { describe, expect, it } from "vitest";
import { buildFieldDiff, buildLineDiff, buildWholeText, diffRecords } from "../../src/kinds/diff.js";

describe("diffRecords", () => {
  it("lists added, removed and changed keys in the given order, then sorted", () => {
    expect(diffRecords({ b: 1, a: [1], same: { x: 1 } }, { c: 2, a: [2], b: 1, same: { x: 1 } }, "m.", ["c"])).toEqual([
      { path: "m.c", op: "add", before: null, after: 2, lines: null },
      { path: "m.a", op: "change", before: [1], after: [2], lines: null },
    ]);
  });

  it("keeps a JSON null value apart from an absent key", () => {
    expect(diffRecords({ a: null }, {})).toEqual([{ path: "a", op: "remove", before: null, after: null, lines: null }]);
    expect(diffRecords({ a: null }, { a: null })).toEqual([]);
  });
});

describe("line diffs of long text", () => {
  const lines = Array.from({ length: 30 }, (_, i) => `<line n="${i + 1}"/>`);
  const text = lines.join("\n");

  it("shows changed lines with three lines of context and hunk headers", () => {
    const after = text.replace('<line n="15"/>', '<line n="15" changed="yes"/>');
    expect(buildLineDiff(text, after)).toEqual([
      "@@ -12,7 +12,7 @@",
      '  <line n="12"/>',
      '  <line n="13"/>',
      '  <line n="14"/>',
      '- <line n="15"/>',
      '+ <line n="15" changed="yes"/>',
      '  <line n="16"/>',
      '  <line n="17"/>',
      '  <line n="18"/>',
    ]);
  });

  it("makes separate hunks of distant changes and aligns inserted lines", () => {
    const after = [...lines.slice(0, 2), "<new/>", ...lines.slice(2, 27), ...lines.slice(28)].join("\n");
    expect(buildLineDiff(text, after)).toEqual([
      "@@ -1,5 +1,6 @@",
      '  <line n="1"/>',
      '  <line n="2"/>',
      "+ <new/>",
      '  <line n="3"/>',
      '  <line n="4"/>',
      '  <line n="5"/>',
      "@@ -25,6 +26,5 @@",
      '  <line n="25"/>',
      '  <line n="26"/>',
      '  <line n="27"/>',
      '- <line n="28"/>',
      '  <line n="29"/>',
      '  <line n="30"/>',
    ]);
  });

  it("cuts long lines and long diffs, saying how much was left out", () => {
    const one = buildLineDiff(`<a>${"x".repeat(500)}</a>`, `<a>${"y".repeat(500)}</a>`);
    expect(one).toEqual(["@@ -1,1 +1,1 @@", `- <a>${"x".repeat(157)}…`, `+ <a>${"y".repeat(157)}…`]);
    const all = buildLineDiff(text, lines.map((l) => l.replace("line", "row")).join("\n"));
    expect(all).toHaveLength(41);
    expect(all[40]).toBe("… 21 more diff lines");
  });

  it("says when texts differ only in line endings", () => {
    expect(buildLineDiff("a\nb", "a\r\nb")).toEqual(["  (the texts differ only in line endings or the final newline)"]);
  });

  it("shows the first lines of a text added or removed whole", () => {
    expect(buildWholeText("+ ", text)).toEqual([...lines.slice(0, 6).map((l) => `+ ${l}`), "… 24 more lines (30 in all)"]);
    expect(buildFieldDiff("idp_metadata", undefined, text).lines).toHaveLength(7);
    expect(buildFieldDiff("description", "a", "b").lines).toBeNull();
  });
});
