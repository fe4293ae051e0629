import { describe, expect, it } from "vitest";
import { CIRCUIT_BREAKER_DEFAULTS, SAML_DEFAULTS } from "../../src/model/wire.js";
import { CHILD1, CHILD2, EDGE, IDP_XML, ROUTE, ROUTE2, WEIGHTED, desiredOf } from "./pipeline.js";

describe("weighted backends", () => {
  it("fill the defaults of what is left out", () => {
    const { desired, messages } = desiredOf(`kind: WeightedBackend\nname: checkout\nbackends:\n  ${CHILD1}: 9000\n  ${CHILD2}: 1000\n`);
    expect(messages).toEqual([]);
    expect(desired.weightedBackends).toEqual([
      {
        kind: "WeightedBackend",
        name: "checkout",
        description: "",
        metadata: {},
        backends: { [CHILD1]: 9000, [CHILD2]: 1000 },
        protect: false,
        source: { file: "m.yaml", line: 1, col: 1 },
        fieldSources: {
          name: { file: "m.yaml", line: 2, col: 7 },
          backends: { file: "m.yaml", line: 4, col: 3 },
          [`backends.${CHILD1}`]: { file: "m.yaml", line: 4, col: 3 },
          [`backends.${CHILD2}`]: { file: "m.yaml", line: 5, col: 3 },
        },
      },
    ]);
  });

  it("keep what is written: description, id to adopt, protect, references by name", () => {
    const { desired, messages } = desiredOf(
      `kind: WeightedBackend\nname: storefront\ndescription: Storefront – live\nid: ${WEIGHTED}\nprotect: true\nbackends:\n  storefront-blue: 10000\n---\nkind: WeightedBackend\nname: storefront-blue\nbackends: {${CHILD1}: 1}\n`,
    );
    expect(messages).toEqual([]);
    const [front] = desired.weightedBackends;
    expect(front).toMatchObject({ description: "Storefront – live", id: WEIGHTED, protect: true, backends: { "storefront-blue": 10000 } });
    expect(desired.weightedBackends.map((w) => w.name)).toEqual(["storefront", "storefront-blue"]);
  });

  it("read metadata written as a mapping and as JSON text of an object to the same object", () => {
    const mapping = desiredOf(`kind: WeightedBackend\nname: a\nmetadata:\n  team: payments\n  tier: 1\n  tags: [eu, pci]\nbackends: {}\n`);
    const json = desiredOf(`kind: WeightedBackend\nname: a\nmetadata: '{"tags": ["eu", "pci"], "tier": 1, "team": "payments"}'\nbackends: {}\n`);
    const flow = desiredOf(`kind: WeightedBackend\nname: a\nmetadata: {tier: 1, team: payments, tags: [eu, pci]}\nbackends: {}\n`);
    const expected = { team: "payments", tier: 1, tags: ["eu", "pci"] };
    expect(mapping.desired.weightedBackends[0]?.metadata).toEqual(expected);
    expect(json.desired.weightedBackends[0]?.metadata).toEqual(expected);
    expect(flow.desired.weightedBackends[0]?.metadata).toEqual(expected);
  });

  it("read empty JSON text and an empty mapping as no metadata", () => {
    for (const written of ["''", "{}", "'{}'", "'  '"]) {
      const { desired, messages } = desiredOf(`kind: WeightedBackend\nname: a\nmetadata: ${written}\nbackends: {${CHILD1}: 1}\n`);
      expect(messages).toEqual([]);
      expect(desired.weightedBackends[0]?.metadata).toEqual({});
    }
  });

  it("count the owner marker, with protect, in the metadata size", () => {
    // {"edgeplan":{"name":"a","stack":"default"},"x":""} is 50 bytes: a value of 4046 bytes makes exactly 4096.
    const doc = (protect: string, size: number): string => `kind: WeightedBackend\nname: a\n${protect}metadata: {x: "${"y".repeat(size)}"}\nbackends: {${CHILD1}: 1}\n`;
    expect(desiredOf(doc("", 4046)).messages).toEqual([]);
    expect(desiredOf(doc("", 4047)).messages).toEqual([
      "m.yaml:3:11: metadata is 4097 bytes once edgeplan's owner marker is added, more than the 4096 bytes the API accepts; make it smaller",
    ]);
    // "protect":true, is in the marker too.
    expect(desiredOf(doc("protect: true\n", 4046)).messages).toEqual([
      "m.yaml:4:11: metadata is 4111 bytes once edgeplan's owner marker is added, more than the 4096 bytes the API accepts; make it smaller",
    ]);
  });

  it("count description bytes, not characters", () => {
    const ok = desiredOf(`kind: WeightedBackend\nname: a\ndescription: "${"é".repeat(127)}"\nbackends: {${CHILD1}: 1}\n`);
    expect(ok.messages).toEqual([]);
    const over = desiredOf(`kind: WeightedBackend\nname: a\ndescription: "${"é".repeat(128)}"\nbackends: {${CHILD1}: 1}\n`);
    expect(over.messages).toEqual(["m.yaml:3:14: description is 256 bytes, more than the 255 bytes the API accepts; shorten it"]);
  });

  it("leave documents with errors out of the desired state, even when later rules run on what is left", () => {
    const { desired, messages } = desiredOf(`kind: WeightedBackend\nname: a\nowner: x\nbackends: {b: 1}\n---\nkind: WeightedBackend\nname: b\nbackends: {${CHILD1}: 1}\n`);
    expect(messages).toEqual([
      "m.yaml:3:1: unknown field owner; remove it (the fields here are apiVersion, kind, name, description, metadata, backends, id, protect, ignore_changes, rollout)",
    ]);
    expect(desired.weightedBackends.map((w) => w.name)).toEqual(["b"]);
  });
});

describe("edge routes", () => {
  it("spell out every module intent: left out is unmanaged, absent, or settings with the API's defaults", () => {
    const { desired, messages } = desiredOf(
      `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  idp_metadata: '${IDP_XML}'\n  allow_idp_initiated: false\ncircuit_breaker: absent\n` +
        `---\nkind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE2}\ncircuit_breaker:\n  tripped_duration: 120\n  rolling_window: 300\n  num_buckets: 5\n  error_threshold_percentage: 0.2\n`,
    );
    expect(messages).toEqual([]);
    const [first, second] = desired.edgeRoutes;
    expect(first?.saml).toEqual({
      state: "present",
      source: { file: "m.yaml", line: 4, col: 1 },
      settings: { ...SAML_DEFAULTS, idp_metadata: IDP_XML, allow_idp_initiated: false },
    });
    expect(first?.circuit_breaker).toEqual({ state: "absent", source: { file: "m.yaml", line: 7, col: 1 } });
    expect(second?.saml).toEqual({ state: "unmanaged" });
    expect(second?.circuit_breaker).toEqual({
      state: "present",
      source: { file: "m.yaml", line: 12, col: 1 },
      settings: { ...CIRCUIT_BREAKER_DEFAULTS, tripped_duration: 120, rolling_window: 300, num_buckets: 5, error_threshold_percentage: 0.2 },
    });
  });

  it("give allow_idp_initiated the API default true, with a warning that says how to silence it", () => {
    const { desired, messages } = desiredOf(`kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  idp_metadata: '${IDP_XML}'\n`);
    expect(messages).toEqual([
      "m.yaml:4:1: warning: saml.allow_idp_initiated is left out, so the API default true applies and the IdP may start logins on its own; write allow_idp_initiated: true (or false) to choose and silence this warning",
    ]);
    const saml = desired.edgeRoutes[0]?.saml;
    expect(saml?.state === "present" && saml.settings.allow_idp_initiated).toBe(true);
  });

  it("keep every written SAML setting", () => {
    const { desired, messages } = desiredOf(
      `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  idp_metadata: '${IDP_XML}'\n  enabled: false\n  options_passthrough: true\n  cookie_prefix: app-\n` +
        `  inactivity_timeout: 600\n  maximum_duration: 3600\n  force_authn: true\n  allow_idp_initiated: true\n  authorized_groups: [a, b]\n` +
        `  nameid_format: urn:oasis:names:tc:SAML:2.0:nameid-format:transient\n`,
    );
    expect(messages).toEqual([]);
    const saml = desired.edgeRoutes[0]?.saml;
    expect(saml?.state === "present" ? saml.settings : undefined).toEqual({
      enabled: false,
      options_passthrough: true,
      cookie_prefix: "app-",
      inactivity_timeout: 600,
      maximum_duration: 3600,
      idp_metadata: IDP_XML,
      force_authn: true,
      allow_idp_initiated: true,
      authorized_groups: ["a", "b"],
      nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
    });
  });

  it("do not share the default group list between routes", () => {
    const { desired } = desiredOf(
      `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml: {idp_metadata: '${IDP_XML}', allow_idp_initiated: false}\n---\n` +
        `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE2}\nsaml: {idp_metadata: '${IDP_XML}', allow_idp_initiated: false}\n`,
    );
    const [a, b] = desired.edgeRoutes.map((r) => (r.saml.state === "present" ? r.saml.settings.authorized_groups : undefined));
    expect(a).toEqual([]);
    expect(a).not.toBe(b);
    expect(a).not.toBe(SAML_DEFAULTS.authorized_groups);
  });
});

describe("variables", () => {
  it("refuse EDGEPLAN_VAR_* where a value is written or shown, naming the variable, never its value; $${ writes a literal ${", () => {
    const { desired, messages } = desiredOf(
      `kind: WeightedBackend\nname: checkout\ndescription: "release \${EDGEPLAN_VAR_RELEASE}, $\${not-a-var}"\nmetadata:\n  team: \${EDGEPLAN_VAR_TEAM}\nbackends: {${CHILD1}: 1}\n`,
      { EDGEPLAN_VAR_RELEASE: "2025.11", EDGEPLAN_VAR_TEAM: "payments" },
    );
    const secretOnly = "and EDGEPLAN_VAR_* values are secrets, sent only in rollout.check.url, rollout.analysis[].web.url and web.headers values";
    const instead = "for a value that is not secret, use ${var.NAME} from the environment's vars (environments.NAME.vars in edgeplan.yaml)";
    expect(messages).toEqual([
      `m.yaml:3:14: \${EDGEPLAN_VAR_RELEASE}: description is written to the API or shown, ${secretOnly}; ${instead}`,
      `m.yaml:5:9: \${EDGEPLAN_VAR_TEAM}: metadata.team is written to the API or shown, ${secretOnly}; ${instead}`,
    ]);
    expect(JSON.stringify(desired)).not.toMatch(/2025\.11|payments/);
    const literal = desiredOf(`kind: WeightedBackend\nname: checkout\ndescription: "release $\${EDGEPLAN_VAR_RELEASE}"\nbackends: {${CHILD1}: 1}\n`);
    expect(literal.messages).toEqual([]);
    expect(literal.desired.weightedBackends[0]?.description).toBe("release ${EDGEPLAN_VAR_RELEASE}");
  });

  it("keep EDGEPLAN_VAR_* as written in a check's URL and a web metric's URL and header values; one not set is a warning", () => {
    const rollout = (check: string, url: string, header: string): string =>
      `kind: WeightedBackend\nname: a\nbackends: {${CHILD1}: 1}\nrollout:\n  max_step: 50\n  interval: 1m\n  check: {url: "${check}"}\n` +
      `  analysis:\n    - name: h\n      web: {url: "${url}", headers: {Authorization: "${header}"}}\n      success: "result == true"\n`;
    const env = { EDGEPLAN_VAR_T: "tok-12345678", EDGEPLAN_VAR_P: "x" };
    const kept = desiredOf(rollout("https://s.example.com/${EDGEPLAN_VAR_P}/x?t=${EDGEPLAN_VAR_T}", "https://m.example.com/?t=${var.v}", "Bearer ${EDGEPLAN_VAR_T}"), env, {
      name: "qa",
      vars: { v: "a${b" },
    });
    expect(kept.messages).toEqual([]);
    const spec = kept.desired.weightedBackends[0]?.rollout;
    expect(spec?.check?.url).toBe("https://s.example.com/${EDGEPLAN_VAR_P}/x?t=${EDGEPLAN_VAR_T}");
    // A value of vars put in is written so that the request reads it back as it is.
    expect(spec?.analysis[0]?.provider).toMatchObject({ url: "https://m.example.com/?t=a$${b", headers: { Authorization: "Bearer ${EDGEPLAN_VAR_T}" } });
    expect(JSON.stringify(kept.desired)).not.toContain("tok-12345678");
    const address = desiredOf(rollout("https://${EDGEPLAN_VAR_T}/x", "https:${EDGEPLAN_VAR_P}.example.com/", "${EDGEPLAN_VAR_UNSET}"), env);
    const where =
      "a variable may stand in the path or the query of the URL, not in its scheme, host or port, so that the plan shows where the request (and its secrets) goes; write the address out";
    expect(address.messages).toEqual([
      `m.yaml:7:16: rollout.check.url: ${where}`,
      `m.yaml:10:18: rollout.analysis[0].web.url: ${where}`,
      "m.yaml:10:83: warning: ${EDGEPLAN_VAR_UNSET}: EDGEPLAN_VAR_UNSET is not set; a plan does not need it, but apply sends it in rollout.analysis[0].web.headers.Authorization: set it where apply runs",
    ]);
  });

  it("never read other variables, even when they are set", () => {
    const { desired, messages } = desiredOf(`kind: WeightedBackend\nname: a\ndescription: \${HOME}\nbackends: {${CHILD1}: 1}\n`, { HOME: "/root" });
    expect(messages).toEqual([
      "m.yaml:3:14: ${HOME}: only EDGEPLAN_VAR_* variables can be used, so that a manifest cannot read the runner's secrets; set EDGEPLAN_VAR_HOME and write ${EDGEPLAN_VAR_HOME}, or write $${HOME} for the literal text",
    ]);
    expect(JSON.stringify(desired)).not.toContain("/root");
  });

  it("are replaced in keys too", () => {
    const { desired } = desiredOf(`kind: WeightedBackend\nname: a\nmetadata: {"\${var.k}": v}\nbackends: {${CHILD1}: 1}\n`, {}, { name: "qa", vars: { k: "k" } });
    expect(desired.weightedBackends[0]?.metadata).toEqual({ k: "v" });
  });

  it("${var.NAME} comes from the chosen environment's vars, in backend-id keys, edge and route ids", () => {
    const staging = { name: "staging", vars: { child: CHILD2, edge: EDGE, route: ROUTE } };
    const text = `kind: WeightedBackend\nname: a\nbackends:\n  \${var.child}: 1\n---\nkind: EdgeRoute\nedge: \${var.edge}\nroute: \${var.route}\ncircuit_breaker: absent\n`;
    const { desired, messages } = desiredOf(text, {}, staging);
    expect(messages).toEqual([]);
    expect(desired.weightedBackends[0]?.backends).toEqual({ [CHILD2]: 1 });
    expect(desired.edgeRoutes.map((r) => `${r.edge}/${r.route}`)).toEqual([`${EDGE}/${ROUTE}`]);
  });

  it("${var.NAME} the environment lacks, or with none chosen, is an error at its key; a key made equal to another is refused", () => {
    const text = `kind: WeightedBackend\nname: a\nbackends:\n  \${var.child}: 1\n  ${CHILD1}: 2\n`;
    expect(desiredOf(text, {}, { name: "production", vars: { edge: EDGE } }).messages).toEqual([
      "m.yaml:4:3: ${var.child}: environment production has no variable child (its vars: edge); add it under environments.production.vars in edgeplan.yaml",
    ]);
    expect(desiredOf(text).messages).toEqual([
      "m.yaml:4:3: ${var.child}: no environment is chosen, so there are no vars; define environments: with vars in edgeplan.yaml and pass --env NAME",
    ]);
    expect(desiredOf(text, {}, { name: "qa", vars: { child: CHILD1 } }).messages).toEqual([
      `m.yaml:5:3: key "${CHILD1}" (after variables are replaced) repeats an earlier key of this mapping; give each a different value`,
    ]);
  });

  it("do not judge a value again when its variable could not be replaced", () => {
    const { messages } = desiredOf(`kind: EdgeRoute\nedge: \${var.edge}\nroute: ${ROUTE}\ncircuit_breaker: absent\n`, {}, { name: "qa", vars: {} });
    expect(messages).toEqual(["m.yaml:2:7: ${var.edge}: environment qa has no variable edge (its vars: none); add it under environments.qa.vars in edgeplan.yaml"]);
  });
});

describe("every problem at once", () => {
  it("reports schema errors, unresolved references, cycles, duplicates and warnings of several objects in one run", () => {
    const { messages } = desiredOf(
      [
        `kind: WeightedBackend\nname: a\nbackends: {b: 1, c: 1, ${CHILD1}: 20000}\n`,
        `kind: WeightedBackend\nname: b\nbackends: {a: 1}\n`,
        `kind: WeightedBackend\nname: a\nbackends: {${CHILD2}: 0}\n`,
        `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\ncircuit_breaker: {tripped_duration: 1, rolling_window: 1, num_buckets: 1, error_threshold_percentage: 5}\n`,
        `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml: absent\n`,
      ].join("---\n"),
    );
    expect(messages.sort()).toEqual(
      [
        `m.yaml:3:59: backends.${CHILD1}: 20000 is out of range 0 to 10000`,
        "m.yaml:3:18: backends.c: no WeightedBackend is named c; did you mean a?",
        "m.yaml:3:12: backends.b: reference cycle a -> b -> a; a weighted backend cannot contain itself, remove one of these references",
        "m.yaml:10:7: name a is already used by the WeightedBackend at m.yaml:2:7; names must be unique across all manifests",
        "m.yaml:11:1: warning: weighted backend a receives no traffic: every weight is 0; give at least one child a weight above 0",
        "m.yaml:16:103: circuit_breaker.error_threshold_percentage: 5 is out of range: error_threshold_percentage is a fraction from 0 to 1; did you mean 0.05?",
        `m.yaml:20:8: edge route ${EDGE}/${ROUTE} is already declared at m.yaml:15:8; declare each route once, with both of its modules in one manifest`,
      ].sort(),
    );
  });
});
