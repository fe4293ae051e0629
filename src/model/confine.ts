/**
 * Which files a path that arrives with the repository may name. The project file (`edgeplan.yaml`) comes with every
 * pull request, so the manifest paths it names stay inside its folder and out of `.git/`: otherwise a pull request
 * could make edgeplan read the runner's credentials (`/home/runner/.git-credentials`, `.git/config`) and post what
 * it found in a diagnostic. And what a diagnostic may quote: not the text of a file that is not a manifest, and no
 * run of characters longer than a name. Pure: callers resolve paths and links, this judges the result.
 */

/** The segments of a path written with `/` or `\` separators, without empty and `.` segments. */
function segments(p: string): string[] {
  return p.split(/[\\/]+/).filter((s) => s !== "" && s !== ".");
}

/** True for `/x`, `\x` and `C:\x`: a path that does not depend on the folder it is read from. */
export function isAbsolutePath(p: string): boolean {
  return /^([\\/]|[A-Za-z]:)/.test(p);
}

/** True when a relative path, once its `..` are applied, climbs above the folder it starts from. */
export function climbsOut(relative: string): boolean {
  let depth = 0;
  for (const s of segments(relative)) {
    depth += s === ".." ? -1 : 1;
    if (depth < 0) return true;
  }
  return false;
}

/** True when a path relative to a repository's folder lies in a `.git` folder, which never holds manifests. */
export function insideGitFolder(relative: string): boolean {
  return segments(relative).some((s) => s.toLowerCase() === ".git");
}

/**
 * Why a manifest path written in the project file may not be read, or undefined when it may. `written` is the path
 * as the file gives it (relative to the file's folder); `real` is where it leads once symbolic links are followed,
 * relative to the real path of that folder, or undefined when nothing is there (the walk reports a missing path).
 */
export function projectPathProblem(written: string, real: string | undefined): string | undefined {
  const advice = "name a file or folder inside the project's folder, or give other paths on the command line";
  if (isAbsolutePath(written)) return `an absolute path is not read from the project file; ${advice}`;
  if (climbsOut(written)) return `this path leads outside the project's folder (the folder of the project file); ${advice}`;
  if (insideGitFolder(written)) return "this path is inside .git/, which holds no manifests; name the folders of the manifests";
  if (real === undefined) return undefined;
  if (isAbsolutePath(real) || climbsOut(real)) return `a symbolic link on this path leads outside the project's folder; ${advice}`;
  if (insideGitFolder(real)) return "a symbolic link on this path leads into .git/, which holds no manifests; name the folders of the manifests";
  return undefined;
}

/**
 * A message of the YAML library without the source text some of its messages end with (`in YAML stream: "..."`,
 * `Unresolved tag: !x`, `Invalid escape sequence \q`): a file named by mistake is not a manifest, and its text (a
 * key, a credential) must not reach a log or a pull-request comment. What is left says what is wrong; the position
 * says where.
 */
export function withoutQuotedSource(message: string): string {
  return message
    .replace(/(: |"| \\).*$/, "")
    .replace(/^(Invalid escape sequence|Unsupported YAML version|Unknown directive|Plain value cannot start with|Verbatim tags aren't resolved).*$/, "$1")
    .replace(/^The .* tag handle/, "A tag handle");
}

/** Longest run of characters without a space that a message shows whole. */
const MAX_TOKEN = 200;

/**
 * Shortens every run of more than MAX_TOKEN characters without a space (a value quoted from the manifest) to its
 * start and end, so that a hostile manifest (a 1 MiB name, a 1 MiB variable name) cannot turn one diagnostic into
 * megabytes of output, annotations or pull-request comments. The advice of the message is kept whole.
 */
export function clipMessage(message: string): string {
  if (message.length <= MAX_TOKEN) return message;
  return message.replace(new RegExp(`\\S{${MAX_TOKEN + 1},}`, "g"), (run) => `${run.slice(0, 60)}...[${run.length - 72} more characters]...${run.slice(-12)}`);
}
