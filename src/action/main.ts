/**
 * The entry of the bundled GitHub Action (action.yml `runs.main`): one run with the process's environment, ending
 * with the exit code that `errorOutcome` gives an error that escaped it.
 */
import { error } from "@actions/core";
import { runActionCommand } from "../commands/action.js";
import { processIO } from "../commands/io.js";
import { errorOutcome } from "../model/errors.js";

runActionCommand(processIO()).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const outcome = errorOutcome(err);
    error(outcome.message, { title: "edgeplan" });
    process.exitCode = outcome.exitCode;
  },
);
