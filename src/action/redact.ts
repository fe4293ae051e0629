/**
 * Secret redaction for everything the action writes itself (log lines, comments, summary, outputs). The runner
 * masks registered secrets in the log, but not in a pull-request comment or the job summary, so the action never
 * relies on it alone.
 */

/** Shown in place of a secret, as GitHub shows masked values. */
export const REDACTED = "***";

export type Redactor = (text: string) => string;

/**
 * A function that replaces every occurrence of each secret in a text with `***`. Empty secrets are ignored; longer
 * secrets are replaced first so that a secret containing another one is hidden whole.
 */
export function createRedactor(secrets: readonly (string | undefined)[]): Redactor {
  const list = [...new Set(secrets.filter((s): s is string => typeof s === "string" && s.trim() !== ""))]
    .flatMap((s) => [s, ...s.split(/\r?\n/).filter((line) => line.trim() !== "")])
    .sort((a, b) => b.length - a.length);
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const secret of list) out = out.split(secret).join(REDACTED);
    return out;
  };
}
