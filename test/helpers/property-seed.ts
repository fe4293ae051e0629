/**
 * Every fast-check property draws its worlds from one seed, so a test run's verdict depends on the code alone and a
 * failure seen once is seen again. `EDGEPLAN_PROPERTY_SEED=N` draws other worlds; `EDGEPLAN_PROPERTY_SEED=random`
 * a new seed on every run (fast-check prints the seed of a failing run, to be passed back here).
 */
import fc from "fast-check";

const DEFAULT_SEED = 20_261_122;
const given = process.env.EDGEPLAN_PROPERTY_SEED;
if (given !== "random") {
  const seed = given === undefined ? DEFAULT_SEED : Number(given);
  if (!Number.isInteger(seed)) throw new Error(`EDGEPLAN_PROPERTY_SEED "${given}" is not a whole number or "random"`);
  fc.configureGlobal({ seed });
}
