/**
 * The pages' stylesheet and script, served as files so that the Content-Security-Policy can forbid every inline
 * script and style. They extend the report's: the same tables, tags and chart styles, and the same sorting.
 */
import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import { type BrowserAsset, browserAsset } from '../report/assets.js';
import type { Env } from './http.js';

const CSS = 'text/css; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
/** What each URL serves: app.js is a module that imports report.js, the report's sorting and tooltips. */
const STATIC_FILES: Record<string, { type: string; parts: BrowserAsset[] }> = {
  'style.css': { type: CSS, parts: ['report.css', 'pages.css', 'annotate.css'] },
  'app.js': { type: JS, parts: ['pages.js'] },
  'report.js': { type: JS, parts: ['report.js'] },
  'annotate.js': { type: JS, parts: ['annotate.js'] },
};

let built: { files: Map<string, { type: string; body: string }>; etag: string } | undefined;
/** The files, read from dist/browser/ once; one ETag for all of them. */
function files(): NonNullable<typeof built> {
  if (!built) {
    const hash = createHash('sha256');
    const map = new Map<string, { type: string; body: string }>();
    for (const [name, f] of Object.entries(STATIC_FILES)) {
      const body = f.parts.map(browserAsset).join('\n');
      hash.update(body);
      map.set(name, { type: f.type, body });
    }
    built = { files: map, etag: `"${hash.digest('hex').slice(0, 16)}"` };
  }
  return built;
}

/** `/static/<name>`: the pages' stylesheet and scripts, cached for an hour and validated by their ETag. */
export function staticRoutes(): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/static/:name', (c) => {
    const { files: all, etag } = files();
    const file = all.get(c.req.param('name'));
    if (!file) return c.notFound();
    c.header('Content-Type', file.type);
    c.header('ETag', etag);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(file.body);
  });
  return app;
}
