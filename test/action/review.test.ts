/** Comment commands and the sticky comment's author: what the action trusts in a pull request's conversation. */
import { describe, expect, it } from "vitest";
import { parseCommands, readCommands } from "../../src/action/acks.js";
import { findStickyComment, type IssueComment, type Octokit } from "../../src/action/github.js";
import { renderAcknowledgements, replaceAcknowledgements } from "../../src/render/action.js";

const comment = (id: number, login: string, body: string, type = login.endsWith("[bot]") ? "Bot" : "User"): IssueComment => ({
  id,
  login,
  type,
  body,
  createdAt: "2026-11-25T13:04:00Z",
  url: `u${id}`,
});

describe("comment commands", () => {
  it("take known rules and hex digests from lines that start with /edgeplan, nothing else", () => {
    expect(parseCommands("LGTM\n/edgeplan ack traffic-shift, mass-delete\n/edgeplan ack destroy-all\n/edgeplan accept 6e4e6463abc6")).toEqual({
      rules: ["traffic-shift", "mass-delete"],
      digests: ["6e4e6463abc6"],
    });
    expect(parseCommands("> /edgeplan ack traffic-shift\nplease /edgeplan ack no-traffic\n/edgeplan accept xyz\n/edgeplan accept 6e4e")).toEqual({ rules: [], digests: [] });
  });

  it("bind an acknowledgement to a plan with --digest, and ignore one that names no digest after the flag", () => {
    expect(parseCommands("/edgeplan ack traffic-shift mass-delete --digest 6e4e6463abc6")).toEqual({
      rules: [],
      digests: [],
      bound: [
        { rule: "traffic-shift", digest: "6e4e6463abc6" },
        { rule: "mass-delete", digest: "6e4e6463abc6" },
      ],
    });
    expect(parseCommands("/edgeplan ack traffic-shift --digest\n/edgeplan ack no-traffic --digest 6e4e")).toEqual({ rules: [], digests: [] });
  });

  it("ignore a command inside an HTML comment, which nobody sees once the comment is rendered", () => {
    const hidden = "LGTM <!-- just in case:\n/edgeplan ack traffic-shift\n/edgeplan accept 6e4e6463abc6\n-->\n<!--\n/edgeplan ack auth-removal";
    expect(parseCommands(hidden)).toEqual({ rules: [], digests: [] });
    expect(parseCommands(`${hidden.slice(0, hidden.lastIndexOf("<!--"))}/edgeplan ack mass-delete`)).toEqual({ rules: ["mass-delete"], digests: [] });
  });

  it("take the name of a policy of level ack when the reviewed plan has it as a risk", () => {
    const body = "/edgeplan ack two-live-children destroy-all";
    expect(parseCommands(body, ["two-live-children"])).toEqual({ rules: ["two-live-children"], digests: [] });
    expect(parseCommands(body)).toEqual({ rules: [], digests: [] });
  });
});

describe("an acknowledgement's plan", () => {
  // Everyone here may merge: what is tested is which plan each acknowledgement counts for.
  const octokit = { rest: { repos: { getCollaboratorPermissionLevel: async () => ({ data: { permission: "write" } }) } } } as unknown as Octokit;
  const repo = { owner: "acme", repo: "routes" };
  const [d1, d2] = ["1".repeat(64), "2".repeat(64)];
  const comments = [
    comment(10, "alice", "/edgeplan ack traffic-shift"),
    comment(20, "bob", `/edgeplan ack mass-delete --digest ${d1.slice(0, 12)}`),
    comment(30, "carol", `/edgeplan ack auth-removal --digest ${d2.slice(0, 12)}`),
  ];
  const counted = async (plan: { digest: string; after: number | undefined } | undefined) => {
    const commands = await readCommands(octokit, repo, comments, "github-actions[bot]", [], plan);
    return { acks: commands.acks.map((a) => `${a.rule}:${a.login}`), stale: commands.stale };
  };

  it("is the plan shown when it was written, or the digest it names, and no other", async () => {
    // The plan of d1 was shown after comment 25: alice's acknowledgement was for an earlier plan.
    expect(await counted({ digest: d1, after: 25 })).toEqual({ acks: ["mass-delete:bob"], stale: ["alice", "carol"] });
    expect(await counted({ digest: d1, after: 5 })).toEqual({ acks: ["traffic-shift:alice", "mass-delete:bob"], stale: ["carol"] });
    expect(await counted({ digest: d2, after: undefined })).toEqual({ acks: ["auth-removal:carol"], stale: ["alice", "bob"] });
    expect(await counted(undefined)).toEqual({ acks: [], stale: ["alice", "bob", "carol"] });
  });
});

describe("the sticky comment", () => {
  const marker = "<!-- edgeplan:plan stack=prod -->";
  it("is the action's own: a comment of someone else that starts with the marker is never read as the record", () => {
    const forged = comment(1, "mallory", `${marker}\n<!-- edgeplan:reviewed digest=${"0".repeat(64)} risks= changes= -->`);
    const own = comment(2, "github-actions[bot]", `${marker}\nplan`);
    expect(findStickyComment([forged, own], marker, "github-actions[bot]")).toBe(own);
    expect(findStickyComment([forged], marker, "github-actions[bot]")).toBeUndefined();
    expect(findStickyComment([forged, own], marker, "edgeplan-app[bot]")).toBeUndefined();
    // A person's account is never the action, whatever its login.
    expect(findStickyComment([comment(3, "github-actions[bot]", `${marker}\nplan`, "User")], marker, "github-actions[bot]")).toBeUndefined();
  });

  it("shows each risk with who acknowledged it, and only that part is rewritten", () => {
    const section = renderAcknowledgements(
      ["traffic-shift", "auth-removal"],
      [{ rule: "traffic-shift", login: "alice", at: "2026-11-25T13:04:00Z", url: "https://c/1" }],
      ["bob"],
    );
    expect(section).toBe(
      [
        "<!-- edgeplan:acks -->",
        "#### Risks to acknowledge",
        "",
        "The apply on merge writes nothing until each risk is acknowledged in this pull request by a person who may merge it.",
        "",
        "- `traffic-shift`: acknowledged by @alice on 2026-11-25 13:04 UTC ([comment](https://c/1))",
        "- `auth-removal`: **not acknowledged**. To acknowledge it, comment `/edgeplan ack auth-removal`",
        "",
        "Ignored: the commands of @bob, who may not merge this pull request.",
        "<!-- /edgeplan:acks -->",
      ].join("\n"),
    );
    const body = `${marker}\nrecord\n${renderAcknowledgements(["auth-removal"], [], [])}\n\nplan`;
    expect(replaceAcknowledgements(body, "NEW")).toBe(`${marker}\nrecord\nNEW\n\nplan`);
    expect(replaceAcknowledgements("no section", "NEW")).toBeUndefined();
    expect(renderAcknowledgements([], [], ["bob"])).toBe("");
  });
});
