"""The page's fixed parts: its style sheet and script, and a Content-Security-Policy
that allows exactly these two (by hash) and nothing from anywhere else.

The script only toggles folds, filters steps and moves between them; the page is
readable with scripts off.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --fmt: #8250df; --dim: #656d76; --line: #d0d7de;
  --bg: #ffffff; --panel: #f6f8fa; --fg: #1f2328; --accent: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --ok: #3fb950; --bad: #f85149; --fmt: #a371f7; --dim: #8d96a0; --line: #30363d;
    --bg: #0d1117; --panel: #161b22; --fg: #e6edf3; --accent: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 20px 60px; }
h1 { font-size: 18px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 15px; margin: 24px 0 8px; }
h3 { font-size: 13.5px; margin: 14px 0 6px; }
pre { margin: 4px 0; padding: 8px 10px; background: var(--panel); border: 1px solid var(--line);
  border-radius: 6px; overflow-x: auto; white-space: pre-wrap; word-break: break-word;
  font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre.cmd { border-left: 4px solid var(--accent); font-weight: 600; }
.dim { color: var(--dim); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff;
  font-weight: 600; font-size: 12.5px; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); }
.badge.fmt { background: var(--fmt); }
table.facts td { padding: 2px 14px 2px 0; vertical-align: top; }
table.facts td:first-child { color: var(--dim); }
table.grid { border-collapse: collapse; font-size: 12.5px; }
table.grid th, table.grid td { border: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; }
nav.timeline { display: flex; gap: 2px; height: 26px; margin: 12px 0 4px; overflow-x: auto; }
nav.timeline a { flex: 1 1 0; min-width: 6px; border-radius: 3px; background: var(--ok);
  color: #fff; font-size: 11px; text-align: center; line-height: 26px; overflow: hidden;
  text-decoration: none; }
nav.timeline a.bad { background: var(--bad); } nav.timeline a.fmt { background: var(--fmt); }
nav.timeline a.none { background: var(--dim); } nav.timeline a.sub { background: var(--accent); }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0 16px; flex-wrap: wrap; }
.toolbar button { font: inherit; padding: 3px 10px; border: 1px solid var(--line);
  border-radius: 6px; background: var(--panel); color: var(--fg); cursor: pointer; }
section.step { border: 1px solid var(--line); border-left: 4px solid var(--ok);
  border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
section.step.bad { border-left-color: var(--bad); }
section.step.fmt { border-left-color: var(--fmt); }
section.step.none { border-left-color: var(--dim); }
section.step.sub { border-left-color: var(--accent); }
section.step.current { outline: 2px solid var(--accent); }
section.step > header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
section.step > header a { font-weight: 700; color: var(--fg); text-decoration: none; }
details > summary { cursor: pointer; color: var(--dim); margin: 4px 0; }
details > summary b { color: var(--fg); }
.code-ok { color: var(--ok); font-weight: 600; } .code-bad { color: var(--bad); font-weight: 600; }
.hidden { display: none; }
figure.nb { margin: .5em 0 .8em 1em; } figure.nb img { max-width: 100%; background: #fff; }
figure.nb figcaption { color: var(--dim); font-size: .85em; }
"""

SCRIPT = """
(function () {
  "use strict";
  var steps = Array.prototype.slice.call(document.querySelectorAll("section.step"));
  var current = -1;
  function setAll(open) {
    document.querySelectorAll("details").forEach(function (d) { d.open = open; });
  }
  function go(i) {
    if (!steps.length) { return; }
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach(function (s, k) { s.classList.toggle("current", k === current); });
    steps[current].scrollIntoView({ block: "start" });
  }
  function bind(id, fn) {
    var el = document.getElementById(id);
    if (el) { el.addEventListener("click", fn); }
  }
  bind("expand", function () { setAll(true); });
  bind("collapse", function () { setAll(false); });
  bind("failing", function (ev) {
    var only = ev.target.getAttribute("aria-pressed") !== "true";
    ev.target.setAttribute("aria-pressed", only ? "true" : "false");
    ev.target.textContent = only ? "Show all steps" : "Only failing steps";
    steps.forEach(function (s) {
      var keep = !only || s.classList.contains("bad") || s.classList.contains("fmt");
      s.classList.toggle("hidden", !keep);
    });
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && /INPUT|TEXTAREA/.test(ev.target.tagName)) { return; }
    if (ev.key === "j") { go(current + 1); }
    else if (ev.key === "k") { go(current - 1); }
  });
  var marks = Array.prototype.slice.call(document.querySelectorAll("nav.timeline a[data-seconds]"));
  var longest = marks.reduce(function (m, a) {
    return Math.max(m, parseFloat(a.getAttribute("data-seconds")) || 0);
  }, 0);
  if (longest > 0) {
    marks.forEach(function (a) {
      var s = parseFloat(a.getAttribute("data-seconds")) || 0;
      a.style.flexGrow = String(1 + 9 * s / longest);
    });
  }
  document.body.setAttribute("data-ready", String(steps.length));
})();
"""


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


POLICY = (
    "default-src 'none'; "
    f"style-src 'sha256-{_sha256(CSS)}'; "
    f"script-src 'sha256-{_sha256(SCRIPT)}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""Only our own style sheet and script run; nothing is fetched."""
