/**
 * The server's log lines: one line per event, each with a time, a level and a message, as JSON (one object per
 * line, the default) or as logfmt text (`key=value` pairs, values quoted when they need it). A line below the
 * configured level is not formatted at all, so debug lines cost nothing in service.
 */

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ["json", "text"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Record<string, unknown>;

/** Writes the lines at or above a level to one sink, in one format. */
export interface Logger {
  /** Whether a line at `level` would be written (to skip building fields that would be dropped). */
  enabled(level: LogLevel): boolean;
  write(level: LogLevel, msg: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** A logger that drops everything (no sink configured). */
export const SILENT: Logger = { enabled: () => false, write: () => undefined };

/**
 * A logger writing one line (without its newline) per call to `sink`, at `level` and above, in `format`; no sink,
 * no lines.
 */
export function createLogger(sink: ((line: string) => void) | undefined, format: LogFormat = "json", level: LogLevel = "info"): Logger {
  if (!sink) return SILENT;
  const min = RANK[level];
  const render = format === "json" ? JSON.stringify : textLine;
  return {
    enabled: (l) => RANK[l] >= min,
    write(l, msg, fields) {
      if (RANK[l] >= min) sink(render({ time: new Date().toISOString(), level: l, msg, ...fields }));
    },
  };
}

/** logfmt: `key=value`, a value quoted (JSON string syntax) when it is empty or holds a space, a quote, `=` or a non-ASCII character. */
function textLine(fields: LogFields): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    parts.push(`${key}=${text === "" || /[\s"=\\]|[^\x20-\x7e]/.test(text) ? JSON.stringify(text) : text}`);
  }
  return parts.join(" ");
}
