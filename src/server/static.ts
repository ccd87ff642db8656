/**
 * The pages' stylesheet and script, served as files so that the Content-Security-Policy can forbid every inline
 * script and style. They extend the report's: the same tables, tags and chart styles, and the same sorting.
 */
import { createHash } from 'node:crypto';
import { SCRIPT, STYLE } from '../report/assets.js';

const SERVER_STYLE = `
body { max-width: 1280px; }
header.site { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1.5rem; padding-bottom: .6rem;
  border-bottom: 1px solid var(--line); margin-bottom: 1rem; }
header.site .brand { font-weight: 700; font-size: 1.15rem; color: var(--fg); text-decoration: none; }
header.site nav { margin: 0; }
.tags .tag { margin-left: .2rem; }
.tag.ok { color: #009E73; border-color: currentColor; }
.tag.warn, .warn { color: var(--warn); border-color: currentColor; }
table.board td, table.board th { white-space: nowrap; }
table.meta th { font-weight: 600; padding-right: 1.5rem; }
.alert { border: 2px solid var(--err); padding: .6rem 1rem; margin: 1rem 0; border-radius: 4px; }
.alert h2 { margin-top: .2rem; border: 0; color: var(--err); }
.notice { border: 2px solid var(--accent); padding: .6rem 1rem; margin: 1rem 0; border-radius: 4px; }
form.upload { display: grid; gap: .7rem; max-width: 34rem; margin: 1rem 0; }
form.upload label { display: grid; gap: .2rem; font-weight: 600; font-size: .9rem; }
form.upload label.check { display: block; font-weight: 400; }
input, select, textarea, button { font: inherit; padding: .35rem .5rem; color: var(--fg); background: var(--bg);
  border: 1px solid var(--line); border-radius: 4px; }
button { cursor: pointer; background: var(--accent); color: #fff; border: 0; padding: .45rem .9rem; }
button.danger { background: var(--err); }
form.inline { display: inline; }
td.actions button { font-size: .75rem; padding: .15rem .4rem; margin: 0 .1rem; }
table.audit code { font-size: .75rem; }
p.description { white-space: pre-wrap; }
`;

const SERVER_SCRIPT = `
(function () {
  document.querySelectorAll('form[data-max-bytes]').forEach(function (form) {
    var max = Number(form.getAttribute('data-max-bytes'));
    var input = form.querySelector('input[type=file]');
    var warn = form.querySelector('.size-warning');
    var check = function () {
      var total = 0;
      Array.prototype.forEach.call(input.files || [], function (f) { total += f.size; });
      var over = total > max;
      warn.hidden = !over;
      warn.textContent = over ? warn.getAttribute('data-text') : '';
      return !over;
    };
    input.addEventListener('change', check);
    form.addEventListener('submit', function (e) { if (!check()) e.preventDefault(); });
  });
  document.querySelectorAll('button[data-action=delete]').forEach(function (b) {
    b.addEventListener('click', function (e) { if (!window.confirm('Delete this submission?')) e.preventDefault(); });
  });
})();
`;

export const ASSETS = {
  css: STYLE + SERVER_STYLE,
  js: SCRIPT + SERVER_SCRIPT,
};

export const ASSET_ETAG = `"${createHash('sha256').update(ASSETS.css).update(ASSETS.js).digest('hex').slice(0, 16)}"`;
