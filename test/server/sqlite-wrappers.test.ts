/**
 * On Node 24 the garbage collector must never destroy a better-sqlite3 wrapper (src/server/sqlite-store.ts,
 * RETIRED): a closed store, its database and its statements stay referenced until the process exits. Run here on
 * any Node with a forced full collection; the package's install test runs `edgeplan demo` on Node 24 itself.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/server/sqlite-store.js";
import { TEST_STORE } from "../helpers/server.js";

/** A full collection, without starting the process with --expose-gc. */
function collectGarbage(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe.skipIf(TEST_STORE === "postgres")("the SQLite store under the garbage collector", () => {
  it("keeps a closed store, with its database and statements, until the process exits", async () => {
    const closed: WeakRef<object>[] = [];
    for (let i = 0; i < 3; i++) {
      const store = openSqliteStore();
      closed.push(new WeakRef(store));
      await store.close();
    }
    const plain = new WeakRef({ control: true });
    // A WeakRef holds its target until the current job ends.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(plain.deref()).toBeUndefined();
    expect(closed.map((ref) => ref.deref() !== undefined)).toEqual([true, true, true]);
  });
});
