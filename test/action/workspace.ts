/**
 * The repository the end-to-end tests of the bundled action check out: its fixture ids, its manifests, and a
 * folder holding them (the runner's workspace).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const EDGE = "edghts_2rFMA4dqHTlJ0hDOzrN9tjBQy96";
export const ROUTE = "edghtsrt_2rFMEf2bt8lLdREcAkAK4ivFIeG";
export const STABLE = "bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR";
export const CANARY = "bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq";

/** The weighted backend `checkout`, split between the two fixture children. */
export const checkoutYaml = (stable: number, canary: number): string =>
  ["kind: WeightedBackend", "name: checkout", "description: Checkout canary", "backends:", `  ${STABLE}: ${stable}`, `  ${CANARY}: ${canary}`, ""].join("\n");

/** A circuit breaker on the fixture route. */
export const routeYaml = [
  "kind: EdgeRoute",
  `edge: ${EDGE}`,
  `route: ${ROUTE}`,
  "circuit_breaker:",
  "  tripped_duration: 30",
  "  rolling_window: 60",
  "  num_buckets: 12",
  "  volume_threshold: 50",
  "  error_threshold_percentage: 0.25",
  "",
].join("\n");

/** A new temporary folder holding `files` (paths relative to it): a checked-out commit. */
export function checkout(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-checkout-"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}
