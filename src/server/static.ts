/**
 * The pages' stylesheet and script, served as files so that the Content-Security-Policy can forbid every inline
 * script and style. They extend the report's: the same tables, tags and chart styles, and the same sorting.
 */
import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import { SCRIPT, STYLE } from '../report/assets.js';
import { ANNOTATE_SCRIPT } from './campaigns/annotate-script.js';
import type { Env } from './http.js';

const SERVER_STYLE = `
body { max-width: 1280px; }
header.site { display: flex; flex-wrap: wrap; align-items: baseline; gap: .5rem 1.5rem; padding-bottom: .6rem;
  border-bottom: 1px solid var(--line); margin-bottom: 1rem; }
header.site .brand { font-weight: 700; font-size: 1.15rem; color: var(--fg); text-decoration: none; }
header.site nav { margin: 0; }
.tags .tag { margin-left: .2rem; }
.tag.ok { color: #009E73; border-color: currentColor; }
.tag.warn, .warn { color: var(--warn); border-color: currentColor; }
table.board td, table.board thead th { white-space: nowrap; }
table.board tbody th { min-width: 9rem; }
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

const ANNOTATE_STYLE = `
body.annotate { max-width: 52rem; }
.annotate-head { padding: .4rem 0 .6rem; border-bottom: 1px solid var(--line); margin-bottom: .6rem; }
details.guidelines p { white-space: pre-wrap; }
.item-nav { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .8rem 0; }
.item-nav .item-state { flex: 1 1 auto; color: var(--muted); }
.item-nav button { background: var(--ref); color: var(--fg); border: 1px solid var(--line); }
.item-nav button.skip { color: var(--warn); }
.item-text { white-space: pre-wrap; font-size: 1.05rem; line-height: 1.6; padding: .8rem; background: var(--ref);
  border-radius: 4px; margin-bottom: 1rem; }
.choices { display: flex; flex-wrap: wrap; gap: .6rem; }
.choices .choice { background: var(--bg); color: var(--fg); border: 2px solid var(--line); font-size: 1.05rem;
  padding: .6rem 1rem; min-width: 9rem; }
.choices .choice.chosen { border-color: var(--accent); background: var(--accent); color: #fff; }
.ranking input { width: 100%; font-size: 1.05rem; }
ul.suggestions { list-style: none; padding: 0; margin: .2rem 0; border: 1px solid var(--line); border-radius: 4px; }
ul.suggestions:empty { display: none; }
ul.suggestions li { padding: .3rem .6rem; cursor: pointer; }
ul.suggestions li.active { background: var(--accent); color: #fff; }
ol.picks li { margin: .3rem 0; } ol.picks li span { display: inline-block; min-width: 16rem; }
ol.picks button, ul.spans button { padding: .1rem .45rem; margin-left: .25rem; }
.tokens { line-height: 2.2; font-size: 1.05rem; padding: .8rem; background: var(--ref); border-radius: 4px;
  user-select: none; outline-offset: 3px; }
.tok { padding: .15rem .1rem; border-radius: 3px; cursor: pointer; }
.tok.selected { background: rgba(0,114,178,.25); }
.tok.cursor { box-shadow: inset 0 -2px 0 var(--accent); }
.tok.ent { border-bottom: 3px solid; }
.tok[data-type]::before { content: attr(data-type); font-size: .65rem; vertical-align: super; margin-right: .15rem;
  color: var(--muted); }
.ent-Drugname { border-color: #0072B2; } .ent-Drugclass { border-color: #009E73; } .ent-Drugform { border-color: #E69F00; }
.ent-DI { border-color: #CC79A7; } .ent-ADR { border-color: #D55E00; } .ent-Finding { border-color: #56B4E9; }
.types { display: flex; flex-wrap: wrap; gap: .4rem; margin: .8rem 0; }
.types .type { background: var(--bg); color: var(--fg); border: 2px solid; }
button.confirm { margin-top: .5rem; }
.save-status { padding: .4rem 0; color: var(--muted); min-height: 2rem; }
.save-status.ok { color: #009E73; } .save-status.error { color: var(--err); font-weight: 600; }
table.links code { font-size: .8rem; word-break: break-all; }
`;

export const ASSETS = {
  css: STYLE + SERVER_STYLE + ANNOTATE_STYLE,
  js: SCRIPT + SERVER_SCRIPT,
  annotate: ANNOTATE_SCRIPT,
};

export const ASSET_ETAG = `"${createHash('sha256').update(ASSETS.css).update(ASSETS.js).update(ASSETS.annotate).digest('hex').slice(0, 16)}"`;

const STATIC_FILES: Record<string, { type: string; body: () => string }> = {
  'style.css': { type: 'text/css; charset=utf-8', body: () => ASSETS.css },
  'app.js': { type: 'text/javascript; charset=utf-8', body: () => ASSETS.js },
  'annotate.js': { type: 'text/javascript; charset=utf-8', body: () => ASSETS.annotate },
};

/** `/static/<name>`: the pages' stylesheet and scripts, cached for an hour and validated by their ETag. */
export function staticRoutes(): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/static/:name', (c) => {
    const file = STATIC_FILES[c.req.param('name')];
    if (!file || !Object.hasOwn(STATIC_FILES, c.req.param('name'))) return c.notFound();
    c.header('Content-Type', file.type);
    c.header('ETag', ASSET_ETAG);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(file.body());
  });
  return app;
}
