/**
 * The entry of the bundled GitHub Action (action.yml `runs.main`): one run with the process's environment, its exit
 * code owned by the guard of src/commands/outcome.ts (an escaped error's `errorOutcome`, and exit 1 for a run that
 * ends without an outcome), each message an error annotation.
 */
import { error } from "@actions/core";
import { runActionCommand } from "../commands/action.js";
import { processIO } from "../commands/io.js";
import { guardOutcome } from "../commands/outcome.js";

const outcome = guardOutcome(process, (message) => error(message, { title: "edgeplan" }));
outcome.running("edgeplan action");
void outcome.settle(runActionCommand(processIO()));
