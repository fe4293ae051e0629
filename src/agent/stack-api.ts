/**
 * The API a stack is reconciled on when the agent's configuration names none: the `api_url` of the environment its
 * folder's `edgeplan.yaml` chooses. Read once per cycle from the commit's snapshot.
 */
import { captureIO } from "../commands/io.js";
import { chooseEnvironment, loadProject } from "../commands/project.js";
import { EdgeplanError } from "../model/errors.js";

/** The environment's `api_url` (or the project file's), or an EdgeplanError saying where to set one. */
export async function apiUrlOf(dir: string, env: string | undefined, processEnv: Record<string, string | undefined>): Promise<string> {
  const io = captureIO({}, dir);
  const project = await loadProject(io, undefined).catch((err: unknown) => {
    throw new EdgeplanError(`${err instanceof Error ? err.message : String(err)}\n${io.err}`.trim());
  });
  const { settings } = chooseEnvironment(project, env, {});
  const url = settings.apiUrl ?? processEnv.EDGEPLAN_API_URL;
  if (url === undefined) throw new EdgeplanError("no API URL: set api_url for the stack in the agent's configuration (or in the environment of its edgeplan.yaml)");
  return url;
}
