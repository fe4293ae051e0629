/**
 * Benchmark `validate`: 1,000 manifest files (weighted backends referring to each other by name, edge routes with
 * circuit breakers and SAML modules reading shared IdP metadata files) written to a temporary folder, then
 * `loadDesired` over the folder. Target: under 1 s.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { loadDesired } from "../src/manifest/load.js";
import { median, rssMb, type Scenario } from "./measure.js";

const FILES = 1000;
const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A well-formed id whose body encodes `n`, so that every generated id is distinct and stable. */
function id(prefix: string, n: number): string {
  let body = "";
  for (let v = n; body.length < 27; v = Math.floor(v / 62)) body = (B62[v % 62] ?? "0") + body;
  return `${prefix}_${body}`;
}

const IDP = (n: number): string =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp${n}.example.com/saml">\n` +
  `  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">\n` +
  `    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp${n}.example.com/sso"/>\n` +
  `  </md:IDPSSODescriptor>\n</md:EntityDescriptor>\n`;

/** Writes the manifests: 70 % weighted backends (every tenth refers to the previous one by name), 30 % routes. */
export function writeManifests(dir: string, files = FILES): void {
  mkdirSync(path.join(dir, "idp"), { recursive: true });
  for (let i = 0; i < 10; i++) writeFileSync(path.join(dir, "idp", `idp-${i}.xml`), IDP(i));
  for (let i = 0; i < files; i++) {
    const team = `team-${String(i % 40).padStart(2, "0")}`;
    mkdirSync(path.join(dir, team), { recursive: true });
    let text: string;
    if (i % 10 < 7) {
      const children = [`  ${id("bkdtg", 2 * i)}: 9000`, `  ${id("bkdhr", 2 * i + 1)}: 1000`];
      if (i % 10 === 6) children.push(`  service-${i - 1}: 500`);
      text =
        `# yaml-language-server: $schema=../../schemas/weighted-backend.schema.json\nkind: WeightedBackend\nname: service-${i}\n` +
        `description: Service ${i} of ${team}, canary split\nmetadata:\n  team: ${team}\n  cost-centre: "${1000 + i}"\n` +
        `backends:\n${children.join("\n")}\n`;
    } else {
      text =
        `kind: EdgeRoute\nedge: ${id("edghts", i % 50)}\nroute: ${id("edghtsrt", i)}\ncircuit_breaker:\n  tripped_duration: 30\n` +
        `  rolling_window: 60\n  num_buckets: 12\n  volume_threshold: 20\n  error_threshold_percentage: 0.25\n` +
        (i % 3 === 0 ? `saml:\n  idp_metadata_file: ../idp/idp-${i % 10}.xml\n  allow_idp_initiated: false\n  authorized_groups: [${team}]\n` : "");
    }
    writeFileSync(path.join(dir, team, `manifest-${String(i).padStart(4, "0")}.yaml`), text);
  }
}

export const validateScenario: Scenario = {
  name: "validate",
  description: `loadDesired over ${FILES} manifest files`,
  target_ms: 1000,
  async run({ quick }) {
    const dir = mkdtempSync(path.join(tmpdir(), "edgeplan-bench-validate-"));
    try {
      writeManifests(dir);
      const timings: number[] = [];
      let objects = 0;
      for (let i = 0; i < (quick ? 1 : 3); i++) {
        const start = performance.now();
        const result = await loadDesired(["."], { cwd: dir, env: {} });
        timings.push(performance.now() - start);
        const errors = result.diagnostics.filter((d) => d.severity === "error");
        if (errors.length > 0 || result.files.length !== FILES) {
          throw new Error(`the generated manifests should be valid: ${result.files.length} files, ${errors.length} errors`);
        }
        objects = result.objects;
      }
      return { wall_ms: median(timings), rss_mb: rssMb(), files: FILES, objects, runs: timings.length };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
