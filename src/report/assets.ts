/**
 * The report's inline stylesheet and script. The page must read fully without the script: it only sorts tables on
 * a header click, shows a chart mark's label on hover, and filters the list of answers.
 */

export const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #5b636d; --line: #d6dbe1;
  --ref: #f3f5f8; --accent: #0072B2; --err: #b3261e; --warn: #8a5a00; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ed; --bg: #15181c; --muted: #a2abb5; --line: #39414a; --ref: #1f242a; --accent: #56B4E9;
    --err: #ff8a80; --warn: #ffcc66; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1120px; padding: 1.5rem 1.25rem 4rem; color: var(--fg); background: var(--bg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .5rem; padding-bottom: .25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1rem; margin: 1.6rem 0 .4rem; }
a { color: var(--accent); }
nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: .5rem 0 0; }
.note { color: var(--muted); font-size: .9rem; margin: .25rem 0 .75rem; }
.note.warn { color: var(--warn); }
small.ci { white-space: nowrap; }
.table-wrap { overflow-x: auto; margin: .5rem 0 1rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .9rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; }
thead th { border-bottom: 2px solid var(--fg); white-space: nowrap; }
tbody th { font-weight: 600; }
table.mono td { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .8rem; text-align: left; }
tr.reference { background: var(--ref); color: var(--muted); }
tr.reference th { font-weight: 400; }
small.ci { display: block; color: var(--muted); font-size: .75rem; }
.tag { display: inline-block; font-size: .72rem; padding: 0 .35rem; border: 1px solid var(--line); border-radius: 3px;
  color: var(--muted); }
.tag.unparsed { color: var(--warn); border-color: currentColor; }
.tag.failed { color: var(--err); border-color: currentColor; }
figure { margin: 1rem 0 1.5rem; break-inside: avoid; }
.chart { overflow-x: auto; color: var(--fg); }
.chart svg { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: .85rem; margin-top: .25rem; }
details { margin: .35rem 0; }
details > summary { cursor: pointer; color: var(--muted); font-size: .9rem; }
details.all-metrics > summary { color: var(--fg); font-size: 1rem; font-weight: 600; margin-top: 1rem; }
details.failures > summary { color: var(--fg); font-size: 1rem; }
details.sample { border-left: 3px solid var(--line); padding-left: .6rem; margin: .4rem 0 .4rem .5rem; }
details.sample > summary { color: var(--fg); }
dl { margin: .4rem 0; } dt { font-weight: 600; font-size: .85rem; margin-top: .4rem; } dd { margin: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--ref); padding: .5rem; margin: .2rem 0;
  font: .82rem/1.45 ui-monospace, "DejaVu Sans Mono", monospace; max-height: 24rem; overflow-y: auto; }
ul.issues { font: .82rem/1.5 ui-monospace, "DejaVu Sans Mono", monospace; padding-left: 1.2rem; }
li.error { color: var(--err); } li.warning { color: var(--warn); }
.js-only { display: none; }
html.js .js-only { display: inline; }
th[aria-sort] { cursor: pointer; }
th[aria-sort="ascending"]::after { content: " ▲"; } th[aria-sort="descending"]::after { content: " ▼"; }
#tip { position: fixed; pointer-events: none; background: var(--fg); color: var(--bg); padding: .25rem .45rem;
  border-radius: 3px; font-size: .8rem; max-width: 28rem; z-index: 10; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, .filter-row, #tip { display: none; }
  h2 { break-after: avoid; } section.task, figure, table { break-inside: avoid; }
  pre { max-height: none; }
}
`;

export const SCRIPT = `
(function () {
  document.documentElement.classList.add('js');
  var num = function (s) {
    var m = String(s).replace(/\\u2212/g, '-').match(/^[<+]?(-?\\d+(?:\\.\\d+)?)/);
    return m ? parseFloat(m[1]) : null;
  };
  document.querySelectorAll('table.sortable').forEach(function (table) {
    var heads = table.querySelectorAll('thead th');
    heads.forEach(function (th, col) {
      th.setAttribute('aria-sort', 'none');
      th.tabIndex = 0;
      var sort = function () {
        var dir = th.getAttribute('aria-sort') === 'descending' ? 'ascending' : 'descending';
        heads.forEach(function (h) { h.setAttribute('aria-sort', 'none'); });
        th.setAttribute('aria-sort', dir);
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col] ? a.cells[col].textContent : '', y = b.cells[col] ? b.cells[col].textContent : '';
          var nx = num(x), ny = num(y), r;
          if (nx !== null && ny !== null) r = nx - ny;
          else if (nx !== null) r = -1; else if (ny !== null) r = 1;
          else r = x.localeCompare(y);
          return dir === 'ascending' ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      };
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sort(); });
    });
  });
  var tip = document.createElement('div');
  tip.id = 'tip'; tip.hidden = true; document.body.appendChild(tip);
  document.querySelectorAll('.chart g.role-mark [aria-label]').forEach(function (el) {
    el.addEventListener('mousemove', function (e) {
      tip.textContent = el.getAttribute('aria-label');
      tip.hidden = false;
      tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
    });
    el.addEventListener('mouseleave', function () { tip.hidden = true; });
  });
  var filter = document.getElementById('sample-filter');
  if (filter) {
    filter.closest('.filter-row').hidden = false;
    filter.addEventListener('input', function () {
      var q = filter.value.toLowerCase();
      document.querySelectorAll('details.sample').forEach(function (d) {
        d.hidden = q !== '' && d.textContent.toLowerCase().indexOf(q) < 0;
      });
      if (q !== '') document.querySelectorAll('details.failures').forEach(function (d) { d.open = true; });
    });
  }
})();
`;
