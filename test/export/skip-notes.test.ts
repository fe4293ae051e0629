import { describe, expect, it } from "vitest";
import { skipNotes } from "../../src/commands/export.js";

const foreign = (id: number, stack: string) => ({ what: `weighted backend wb_${id}`, reason: `it belongs to stack "${stack}"`, stack });

describe("export's notes on skipped objects", () => {
  const skipped = [foreign(1, "red"), foreign(2, "green"), { what: "weighted backend wb_9", reason: "its metadata is text" }, foreign(3, "green")];

  it("counts another stack's objects per stack in one line, and keeps every other skip", () => {
    expect(skipNotes(skipped, false)).toEqual([
      `note: skipped 3 objects of other stacks (stack "green": 2, stack "red": 1), as edgeplan never changes another stack's objects; --verbose lists them, --takeover exports them pinned by id\n`,
      "note: skipped weighted backend wb_9: its metadata is text\n",
    ]);
  });

  it("lists each with --verbose", () => {
    expect(skipNotes(skipped, true)).toHaveLength(4);
    expect(skipNotes(skipped, true)[0]).toBe(`note: skipped weighted backend wb_1: it belongs to stack "red"\n`);
  });
});
