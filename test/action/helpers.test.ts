/** The action's small parts: inputs (read through the toolkit), the GitHub context, annotation paths, redaction. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadGitHubContext, resolveCommand } from "../../src/action/context.js";
import { inputEnvName, readActionInputs, splitList } from "../../src/action/inputs.js";
import { createRedactor } from "../../src/model/redact.js";
import { repoRelativePath } from "../../src/action/run.js";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("annotation paths", () => {
  it("are relative to the workspace, with forward slashes", () => {
    expect(repoRelativePath("/home/runner/work/repo/manifests/checkout.yaml", "/home/runner/work/repo")).toBe("manifests/checkout.yaml");
    expect(repoRelativePath("./m.yaml", "/w")).toBe("m.yaml");
    expect(repoRelativePath("C:\\w\\repo\\m.yaml", "C:\\w\\repo\\")).toBe("m.yaml");
    expect(repoRelativePath("/elsewhere/m.yaml", "/w")).toBe("/elsewhere/m.yaml");
  });
});

describe("inputs", () => {
  /** Sets the INPUT_ variables of `values` (and clears the others), as the runner does for a step. */
  const env = (values: Record<string, string>): void => {
    for (const name of Object.keys(process.env)) if (name.startsWith("INPUT_")) vi.stubEnv(name, undefined);
    for (const [k, v] of Object.entries(values)) vi.stubEnv(inputEnvName(k), v);
  };

  it("reads INPUT_ variables with hyphens kept", () => {
    expect(inputEnvName("api-key")).toBe("INPUT_API-KEY");
    expect(inputEnvName("github-token")).toBe("INPUT_GITHUB-TOKEN");
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
      "drift-issue": "true",
      "on-difference": "apply",
      wait: "true",
      "wait-timeout": "50m",
      "lock-timeout": "30m",
      "rollouts-only": "true",
      "comment-author": "edgeplan-bot[bot]",
    });
    expect(readActionInputs()).toEqual({
      command: "apply",
      paths: ["manifests", "more", "other"],
      stack: "prod",
      apiUrl: "https://api.example.com",
      apiKey: "k",
      prune: true,
      ack: ["traffic-shift", "mass-delete"],
      onDifference: "apply",
      wait: true,
      waitTimeout: "50m",
      lockTimeout: "30m",
      rolloutsOnly: true,
      comment: false,
      commentAuthor: "edgeplan-bot[bot]",
      driftIssue: true,
      githubToken: "t",
    });
  });

  it("has defaults for what is left out or blank", () => {
    env({ paths: "  ", comment: "" });
    expect(readActionInputs()).toEqual({
      paths: ["."],
      prune: false,
      ack: [],
      onDifference: "refuse",
      wait: false,
      rolloutsOnly: false,
      comment: true,
      commentAuthor: "github-actions[bot]",
      driftIssue: false,
    });
    expect(splitList(undefined)).toEqual([]);
  });

  it("refuses wrong values with a message naming the input", () => {
    env({ command: "destroy" });
    expect(() => readActionInputs()).toThrow('input command: "destroy" is not a command of the action; use plan or apply (or leave it out)');
    env({ "on-difference": "ignore" });
    expect(() => readActionInputs()).toThrow('input on-difference: "ignore" is not a choice; use refuse (the default) or apply');
    env({ wait: "yes" });
    expect(() => readActionInputs()).toThrow('input wait: "yes" is not a boolean; use true or false');
    env({ prune: "yes" });
    expect(() => readActionInputs()).toThrow('input prune: "yes" is not a boolean; use true or false');
    env({ "drift-issue": "on" });
    expect(() => readActionInputs()).toThrow('input drift-issue: "on" is not a boolean; use true or false');
    env({ ack: "traffic-shift, everything" });
    expect(() => readActionInputs()).toThrow('input ack: unknown rule "everything"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete');
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

describe("redaction", () => {
  it("hides every secret, longest first", () => {
    const redact = createRedactor(["s3cret-key", "s3cret", undefined, ""]);
    expect(redact("a s3cret-key and s3cret")).toBe("a *** and ***");
    expect(createRedactor([])("same")).toBe("same");
  });
});
