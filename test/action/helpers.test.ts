import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildCommentBody, commentMarker, cutMarkdown, isStickyComment } from "../../src/action/comment.js";
import { loadGitHubContext, resolveCommand } from "../../src/action/context.js";
import { inputEnvName, readActionInputs, splitList } from "../../src/action/inputs.js";
import { fitSummary, formatOutputs, writeOutputs } from "../../src/action/outputs.js";
import { createRedactor } from "../../src/action/redact.js";
import {
  addMaskCommands,
  diagnosticAnnotation,
  escapeData,
  escapeProperty,
  repoRelativePath,
  workflowCommand,
} from "../../src/action/workflow-commands.js";

describe("workflow commands", () => {
  it("escapes messages and properties as the runner parses them", () => {
    expect(escapeData("50% done\r\nnext: a,b")).toBe("50%25 done%0D%0Anext: a,b");
    expect(escapeProperty("C:\\x,y%\n")).toBe("C%3A\\x%2Cy%25%0A");
    expect(workflowCommand("error", { file: "a:b,c.yaml", line: 3, col: undefined }, "bad\nthing")).toBe(
      "::error file=a%3Ab%2Cc.yaml,line=3::bad%0Athing\n",
    );
    expect(workflowCommand("notice", {}, "hi")).toBe("::notice::hi\n");
  });

  it("pins a diagnostic to its file relative to the workspace", () => {
    const line = diagnosticAnnotation(
      { severity: "error", pos: { file: "/home/runner/work/repo/manifests/checkout.yaml", line: 7, col: 5 }, message: "weight 10001 is out of range 0 to 10000" },
      "/home/runner/work/repo",
    );
    expect(line).toBe("::error file=manifests/checkout.yaml,line=7,col=5,title=edgeplan::weight 10001 is out of range 0 to 10000\n");
    const warning = diagnosticAnnotation({ severity: "warning", pos: { file: "./m.yaml", line: 1, col: 1 }, message: "x" }, "/w");
    expect(warning).toBe("::warning file=m.yaml,line=1,col=1,title=edgeplan::x\n");
    expect(repoRelativePath("C:\\w\\repo\\m.yaml", "C:\\w\\repo\\")).toBe("m.yaml");
    expect(repoRelativePath("/elsewhere/m.yaml", "/w")).toBe("/elsewhere/m.yaml");
  });

  it("masks each line of a secret", () => {
    expect(addMaskCommands("abc")).toBe("::add-mask::abc\n");
    expect(addMaskCommands("line1\nline2\n")).toBe("::add-mask::line1\n::add-mask::line2\n");
  });
});

describe("inputs", () => {
  const env = (values: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(values).map(([k, v]) => [inputEnvName(k), v]));

  it("reads INPUT_ variables with hyphens kept", () => {
    expect(inputEnvName("api-key")).toBe("INPUT_API-KEY");
    expect(inputEnvName("github-token")).toBe("INPUT_GITHUB-TOKEN");
    const inputs = readActionInputs(
      env({
        command: " apply ",
        paths: "manifests\nmore, other",
        stack: "prod",
        "api-url": "https://api.example.com",
        "api-key": "k",
        prune: "True",
        ack: "traffic-shift,\nmass-delete\ntraffic-shift",
        comment: "FALSE",
        "github-token": "t",
      }),
    );
    expect(inputs).toEqual({
      command: "apply",
      paths: ["manifests", "more", "other"],
      stack: "prod",
      apiUrl: "https://api.example.com",
      apiKey: "k",
      prune: true,
      ack: ["traffic-shift", "mass-delete"],
      comment: false,
      githubToken: "t",
    });
  });

  it("has defaults for what is left out or blank", () => {
    expect(readActionInputs(env({ paths: "  ", comment: "" }))).toEqual({ paths: ["."], prune: false, ack: [], comment: true });
    expect(splitList(undefined)).toEqual([]);
  });

  it("refuses wrong values with a message naming the input", () => {
    expect(() => readActionInputs(env({ command: "destroy" }))).toThrow(
      'input command: "destroy" is not a command of the action; use plan or apply (or leave it out)',
    );
    expect(() => readActionInputs(env({ prune: "yes" }))).toThrow('input prune: "yes" is not a boolean; use true or false');
    expect(() => readActionInputs(env({ ack: "traffic-shift, everything" }))).toThrow(
      'input ack: unknown rule "everything"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete',
    );
  });
});

describe("GitHub context", () => {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-ctx-"));
  const event = (name: string, payload: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify(payload));
    return path;
  };

  it("reads a pull request and tells a fork from a branch", () => {
    const base = { GITHUB_EVENT_NAME: "pull_request", GITHUB_REPOSITORY: "acme/routes", GITHUB_RUN_ID: "42", GITHUB_API_URL: "https://ghe.example.com/api/v3/" };
    const same = loadGitHubContext(
      {
        ...base,
        GITHUB_EVENT_PATH: event("same.json", {
          pull_request: { number: 7, head: { sha: "0123456789abcdef", repo: { full_name: "acme/routes" } }, base: { repo: { full_name: "acme/routes" } } },
        }),
      },
      "/cwd",
    );
    expect(same).toMatchObject({
      eventName: "pull_request",
      repository: { owner: "acme", repo: "routes" },
      apiUrl: "https://ghe.example.com/api/v3",
      runUrl: "https://github.com/acme/routes/actions/runs/42",
      workspace: "/cwd",
      pullRequest: { number: 7, headSha: "0123456789abcdef", isFork: false },
    });
    const fork = loadGitHubContext(
      {
        ...base,
        GITHUB_EVENT_PATH: event("fork.json", {
          pull_request: { number: 8, head: { repo: { full_name: "someone/routes" } }, base: { repo: { full_name: "acme/routes" } } },
        }),
      },
      "/cwd",
    );
    expect(fork.pullRequest).toEqual({ number: 8, headRepo: "someone/routes", baseRepo: "acme/routes", isFork: true });
  });

  it("says which event payload cannot be read", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{not json");
    expect(() => loadGitHubContext({ GITHUB_EVENT_PATH: bad }, "/")).toThrow(`GITHUB_EVENT_PATH ${bad}: the event payload cannot be read as JSON`);
  });

  it("chooses plan on pull requests and apply on a push to the default branch only", () => {
    const ctx = (eventName: string, ref?: string) => ({
      eventName,
      apiUrl: "",
      workspace: "/",
      defaultBranch: "main",
      ...(ref ? { ref } : {}),
    });
    expect(resolveCommand(undefined, ctx("pull_request"))).toBe("plan");
    expect(resolveCommand(undefined, ctx("push", "refs/heads/main"))).toBe("apply");
    expect(resolveCommand(undefined, ctx("push", "refs/heads/feature"))).toBe("plan");
    expect(resolveCommand(undefined, ctx("schedule"))).toBe("plan");
    expect(resolveCommand("apply", ctx("pull_request"))).toBe("apply");
  });
});

describe("comment and summary text", () => {
  it("marks the sticky comment per stack", () => {
    expect(commentMarker("prod")).toBe("<!-- edgeplan:plan stack=prod -->");
    expect(isStickyComment("<!-- edgeplan:plan stack=prod -->\n### plan", commentMarker("prod"))).toBe(true);
    expect(isStickyComment("<!-- edgeplan:plan stack=prod2 -->\n", commentMarker("prod"))).toBe(false);
    expect(isStickyComment("> <!-- edgeplan:plan stack=prod -->", commentMarker("prod"))).toBe(false);
  });

  it("leaves text within the limit alone", () => {
    expect(cutMarkdown("short", 10, "note")).toBe("short");
  });

  it("cuts at a line and closes an open fence and details block", () => {
    const md = ["# Plan", "<details><summary>x</summary>", "", "```diff", ...Array.from({ length: 50 }, (_, i) => `+ line ${i}`), "```", "</details>"].join("\n");
    const cut = cutMarkdown(md, 200, "(cut)");
    expect(cut.length).toBeLessThanOrEqual(200);
    expect(cut.startsWith("# Plan\n<details><summary>x</summary>\n\n```diff\n+ line 0\n")).toBe(true);
    expect(cut.endsWith("\n```\n\n</details>\n\n(cut)\n")).toBe(true);
    // Every kept line is a whole line of the original.
    const kept = cut.split("\n```\n\n</details>")[0]!.split("\n");
    for (const line of kept) expect(md.split("\n")).toContain(line);
  });

  it("keeps a comment body within GitHub's limit and points at the summary", () => {
    const markdown = `| summary |\n|---|\n${"x".repeat(100)}\n`.repeat(1000);
    const body = buildCommentBody({ marker: commentMarker("s"), title: "edgeplan plan", markdown, runUrl: "https://github.com/a/b/actions/runs/1" });
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body.length).toBeGreaterThan(60_000);
    expect(body.startsWith("<!-- edgeplan:plan stack=s -->\n### edgeplan plan\n\n| summary |")).toBe(true);
    expect(body).toContain("the full plan is in the job summary of [this run](https://github.com/a/b/actions/runs/1).");
    const small = buildCommentBody({ marker: "<!-- m -->", title: "t", markdown: "plan", footer: "Commit abc" });
    expect(small).toBe("<!-- m -->\n### t\n\nplan\n\n<sub>Commit abc</sub>\n");
  });

  it("cuts a summary to 1 MiB in bytes", () => {
    const big = "é".repeat(700_000) + "\n";
    const lines = `${"é".repeat(1000)}\n`.repeat(700);
    expect(Buffer.byteLength(fitSummary(big + lines, 1024 * 1024))).toBeLessThanOrEqual(1024 * 1024);
    expect(fitSummary("small")).toBe("small");
  });
});

describe("outputs", () => {
  it("writes multi-line outputs with a delimiter", () => {
    expect(formatOutputs({ exitcode: "2", summary: "a\nb" }, "EOF_1")).toBe("exitcode<<EOF_1\n2\nEOF_1\nsummary<<EOF_1\na\nb\nEOF_1\n");
    expect(() => formatOutputs({ summary: "x EOF_1" }, "EOF_1")).toThrow("output summary: the value contains the output delimiter");
    const file = join(mkdtempSync(join(tmpdir(), "edgeplan-out-")), "output");
    writeFileSync(file, "earlier<<X\n1\nX\n");
    writeOutputs(file, { "has-changes": "true" });
    expect(readFileSync(file, "utf8")).toMatch(/^earlier<<X\n1\nX\nhas-changes<<(ghadelimiter_[0-9a-f-]{36})\ntrue\n\1\n$/);
  });
});

describe("redaction", () => {
  it("hides every secret, longest first", () => {
    const redact = createRedactor(["s3cret-key", "s3cret", undefined, ""]);
    expect(redact("a s3cret-key and s3cret")).toBe("a *** and ***");
    expect(createRedactor([])("same")).toBe("same");
  });
});
