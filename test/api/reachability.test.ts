/** When the API is taken as gone (src/api/reachability.ts): only runs of requests that got no answer count. */
import { describe, expect, it } from "vitest";
import { describeGone, GONE_AFTER_REQUESTS, Reachability } from "../../src/api/reachability.js";

describe("Reachability", () => {
  it("takes the API as gone after 3 requests in a row got no answer, naming the first one's failure", () => {
    const r = new Reachability();
    expect(GONE_AFTER_REQUESTS).toBe(3);
    r.noAnswer("http://127.0.0.1:1", "connection refused (ECONNREFUSED)", 6);
    r.noAnswer("http://127.0.0.1:1", "connection reset (ECONNRESET)", 6);
    expect(r.gone.aborted).toBe(false);
    expect(r.cause()).toBeNull();
    r.noAnswer("http://127.0.0.1:1", "connection reset (ECONNRESET)", 6);
    expect(r.gone.aborted).toBe(true);
    const cause = r.cause();
    expect(cause).toEqual({ origin: "http://127.0.0.1:1", what: "connection refused (ECONNREFUSED)", attempts: 6, requests: 3 });
    expect(describeGone(cause as NonNullable<typeof cause>)).toBe(
      "the API at http://127.0.0.1:1 stopped answering: 3 requests in a row got no answer (the first after 6 attempts: connection refused (ECONNREFUSED)); check that the server is up and --api-url",
    );
  });

  it("an answer ends the run: two failures, an answer, two failures are not enough", () => {
    const r = new Reachability();
    r.noAnswer("o", "a", 6);
    r.noAnswer("o", "a", 6);
    r.answered();
    r.noAnswer("o", "b", 6);
    r.noAnswer("o", "b", 6);
    expect(r.gone.aborted).toBe(false);
    r.noAnswer("o", "b", 6);
    expect(r.cause()?.what).toBe("b");
  });

  it("once gone, stays gone", () => {
    const r = new Reachability(1);
    r.noAnswer("o", "a", 1);
    r.answered();
    expect(r.gone.aborted).toBe(true);
  });
});
