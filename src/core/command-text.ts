/**
 * Commands a person is told to run, inside notes and messages. A note quotes the command it names (`run "edgeplan
 * rollout promote web" to go on`) and names no flags: a plan is data that must not depend on how it was made. The
 * command that shows the text knows how it reached the API (`--local`, `--api-url`, `--config`, `--stack`, ...) and
 * passes those flags in, so that the command shown runs as printed. Pure.
 */

/**
 * `text` with `where` (flags, each with a leading space, as `whereText` in src/commands/hints.ts writes them)
 * appended inside every quoted `"edgeplan ..."` command; `text` itself when `where` is empty.
 */
export function completeCommands(text: string, where: string): string {
  if (where === "") return text;
  return text.replace(/"(edgeplan [a-z][^"]*)"/g, (_quoted, command: string) => `"${command}${where}"`);
}
