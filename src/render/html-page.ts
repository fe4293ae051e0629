/**
 * The shell of every HTML page edgeplan writes (the plan, the apply report): one self-contained document with its
 * CSS inline, no script, no font, image or stylesheet from anywhere else, so it works opened from disk or attached
 * to a CI run. Light and dark colour schemes follow the reader's system; the layout holds at 360 px wide. Pure.
 */

/** Text safe in HTML content and in double-quoted attributes. */
export function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}

/** Colours of the children in a traffic split, by position; the same child has the same colour before and after. */
export const SPLIT_COLOURS = 8;

const CSS = `
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;--code:#eff2f5;
--add:#1a7f37;--del:#cf222e;--chg:#9a6700;--own:#0969da;--risk:#ffebe9;--risk-line:#cf222e;--warn:#fff8c5;--warn-line:#9a6700;
--c0:#0969da;--c1:#bf8700;--c2:#1a7f37;--c3:#8250df;--c4:#cf222e;--c5:#0a7b83;--c6:#bf3989;--c7:#6e7781;--empty:#d1d9e0}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--card:#151b23;--code:#212830;
--add:#3fb950;--del:#f85149;--chg:#d29922;--own:#4493f8;--risk:#3c1618;--risk-line:#f85149;--warn:#2e2a16;--warn-line:#d29922;
--c0:#4493f8;--c1:#d29922;--c2:#3fb950;--c3:#ab7df8;--c4:#f85149;--c5:#39c5cf;--c6:#db61a2;--c7:#9198a1;--empty:#3d444d}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;overflow-wrap:anywhere;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:980px;margin:0 auto;padding:16px 12px 48px}
h1{font-size:1.5rem;margin:0 0 4px}h2{font-size:1.2rem;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:0;display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
p{margin:6px 0}ul{margin:6px 0;padding-left:20px}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace}
code{background:var(--code);padding:1px 4px;border-radius:4px;overflow-wrap:anywhere}
pre{background:var(--code);padding:8px;border-radius:6px;margin:6px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.muted{color:var(--muted)}
.summary{font-weight:600;font-size:1.05rem}
.counts{display:flex;flex-wrap:wrap;gap:6px;padding:0;list-style:none}
.counts li{border:1px solid var(--line);border-radius:999px;padding:0 10px;background:var(--card)}
.box{border-left:4px solid var(--risk-line);background:var(--risk);padding:8px 12px;border-radius:6px;margin:8px 0}
.box.warn{border-color:var(--warn-line);background:var(--warn)}
.box h2{border:0;margin:0 0 4px;padding:0}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:10px 0;background:var(--card)}
.sym{display:inline-block;min-width:1.6em;text-align:center;font-weight:700;font-family:ui-monospace,Menlo,Consolas,monospace;border-radius:4px}
.a-create{color:var(--add)}.a-delete{color:var(--del)}.a-update{color:var(--chg)}.a-own{color:var(--own)}
.split{margin:8px 0}
.bar-row{display:grid;grid-template-columns:3.6em 1fr;gap:8px;align-items:center;margin:4px 0}
.bar{display:block;width:100%;height:22px;border-radius:4px;background:var(--empty)}
.s0{fill:var(--c0);background:var(--c0)}.s1{fill:var(--c1);background:var(--c1)}.s2{fill:var(--c2);background:var(--c2)}
.s3{fill:var(--c3);background:var(--c3)}.s4{fill:var(--c4);background:var(--c4)}.s5{fill:var(--c5);background:var(--c5)}
.s6{fill:var(--c6);background:var(--c6)}.s7{fill:var(--c7);background:var(--c7)}
.shares{list-style:none;padding:0;margin:6px 0}
.shares li{display:flex;flex-wrap:wrap;gap:4px 8px;align-items:baseline;padding:2px 0;border-top:1px dashed var(--line)}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;flex:none}
.share{font-variant-numeric:tabular-nums;font-weight:600;margin-left:auto}
.tag{font-size:12px;border:1px solid currentColor;border-radius:999px;padding:0 6px}
.diffs{margin:6px 0;padding:0;list-style:none}
.diffs li{margin:4px 0}
.del{color:var(--del)}.add{color:var(--add)}.hunk{color:var(--own)}
table{border-collapse:collapse;width:100%;table-layout:fixed}
th,td{text-align:left;vertical-align:top;padding:4px 6px;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:minmax(7em,max-content) 1fr;gap:2px 10px;margin:6px 0}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
@media (max-width:600px){dl{grid-template-columns:1fr}dd{margin-bottom:6px}main{padding:12px 8px 32px}}
`;

/** A whole page: `title` in the head, `body` (already escaped HTML) in `<main>`. Ends with a newline. */
export function renderHtmlPage(title: string, body: string[]): string {
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    // Nothing may load from anywhere: no script, font, image or stylesheet but the inline CSS.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${esc(title)}</title>`,
    `<style>${CSS.trim()}</style>`,
    "</head>",
    "<body>",
    "<main>",
    ...body,
    "</main>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
