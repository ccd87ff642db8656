/**
 * The page frame and the small pieces every page uses. Views take typed data and render it; they run no query.
 * Every string is escaped by hono/jsx; the only raw markup is the SVG that Vega drew and a board's rank notes (escaped
 * by hono's own escaper, boards/views.tsx).
 */
import type { Child, FC } from 'hono/jsx';
import type { Lang, Strings } from '../../report/i18n.js';
import { ISSUE_FRAME, ISSUE_WORDS } from '../../scoring/issue-words.js';
import type { IssueCode } from '../../scoring/issues.js';
import type { ServerStrings } from '../i18n.js';

export interface PageContext {
  lang: Lang;
  t: ServerStrings;
  r: Strings;
  /** The path and query of this page, for the language switch. */
  path: string;
  csrf: string;
  admin: boolean;
}

import { raw } from 'hono/html';
import { dateTime } from '../../report/format.js';
import type { ChartBlock } from '../charts.js';

export { ciText, f2 } from '../../report/format.js';

/**
 * A drawn chart in its figure: where the page's drawing is wider than a phone's box, the phone's drawing beside it,
 * and the stylesheet shows the one that fits (pages.css; the other is `display: none`, out of sight and of a screen
 * reader's reading). A chart shrunk to a phone would print its text at 4-6 px; one scrolled sideways hid its points.
 */
export const Figure: FC<{ chart: ChartBlock }> = ({ chart }) => (
  <figure id={chart.id} class={chart.phoneSvg ? 'two-sizes' : undefined}>
    <div class="chart wide">{raw(chart.svg)}</div>
    {chart.phoneSvg ? <div class="chart phone">{raw(chart.phoneSvg)}</div> : ''}
    {chart.description.length <= 400 ? <figcaption>{chart.description}</figcaption> : ''}
  </figure>
);

/** A stored moment (ISO text) as the page's language writes it, the ISO text in `datetime` for machines. */
export const When: FC<{ ctx: PageContext; iso: string }> = ({ ctx, iso }) => (
  <time datetime={iso}>{dateTime(iso, ctx.lang)}</time>
);

/** Counts are written one way, the report's (Intl): "1 200 000" on a Russian page. */
export { count } from '../../report/format.js';

/** A link that keeps the page's language. */
export const href = (ctx: PageContext, path: string): string =>
  `${path}${path.includes('?') ? '&' : '?'}lang=${ctx.lang}`;

const otherLang = (ctx: PageContext): string => {
  const u = new URL(ctx.path, 'http://x');
  u.searchParams.set('lang', ctx.lang === 'ru' ? 'en' : 'ru');
  return `${u.pathname}${u.search}`;
};

export const Layout: FC<{ ctx: PageContext; title: string; children?: Child }> = ({
  ctx,
  title,
  children,
}) => (
  <html lang={ctx.lang}>
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <title>{`${title} · ${ctx.t.site}`}</title>
      <link rel="stylesheet" href="/static/style.css" />
      <script type="module" src="/static/app.js"></script>
    </head>
    <body>
      <header class="site">
        <a class="brand" href={href(ctx, '/')}>
          {ctx.t.site}
        </a>
        <nav>
          <a href={href(ctx, '/')}>{ctx.t.publicBoard}</a>
          <a href={href(ctx, '/board/closed')}>{ctx.t.closedBoard}</a>
          <a href={href(ctx, '/submit')}>{ctx.t.submit}</a>
          <a href={href(ctx, '/runs')}>{ctx.t.runs.title}</a>
          {ctx.admin ? <a href={href(ctx, '/admin')}>{ctx.t.admin}</a> : ''}
          <a href={otherLang(ctx)} hreflang={ctx.lang === 'ru' ? 'en' : 'ru'}>
            {ctx.t.language}
          </a>
        </nav>
      </header>
      <main>{children}</main>
    </body>
  </html>
);

export const CsrfField: FC<{ ctx: PageContext }> = ({ ctx }) => (
  <input type="hidden" name="_csrf" value={ctx.csrf} />
);

type Issue = {
  severity: string;
  code: string;
  message: string;
  file: string;
  line?: number;
  id?: string;
  expected?: string;
  found?: string;
};

/** Hints written for the command line (`--file-gold`): a page's reader has no flag to give, so a page leaves them out. */
const CLI_ONLY = new Set(['DATA_VERSION_HINT']);
/** Items of a kind of problem named on its line; the rest are counted. */
const SHOWN = 3;

/**
 * A line's words in the page's language: the English message on an English page; on a Russian one, the code's
 * meaning in Russian (src/scoring/issue-words.ts), the values it names shown as code.
 */
const IssueWords: FC<{ lang: Lang; i: Issue }> = ({ lang, i }) => {
  const w = ISSUE_FRAME[lang];
  const words = ISSUE_WORDS[i.code as IssueCode];
  return (
    <>
      {lang === 'en' ? i.message : words ? words.ru : <code>{i.message}</code>}
      {i.expected !== undefined ? (
        <>
          {' — '}
          {w.expected} <ValueText lang={lang} v={i.expected} />
        </>
      ) : (
        ''
      )}
    </>
  );
};

/** A value a line names (a file, an id, a label, what was expected): as it is on an English page, as code on a Russian one. */
const ValueText: FC<{ lang: Lang; v: string }> = ({ lang, v }) =>
  // biome-ignore lint/complexity/noUselessFragments: the text stays a JSX child, escaped like every other
  lang === 'en' ? <>{v}</> : <code>{v}</code>;

/**
 * An upload's problems, one line per kind (its code and file): one problem as it is; several counted, with the first
 * one's words and the first few ids or lines (one wrong id is not 256 lines of MISSING_ITEM). In the page's language.
 */
export const IssueList: FC<{ issues: readonly Issue[]; lang?: Lang }> = ({ issues, lang = 'en' }) => {
  const w = ISSUE_FRAME[lang];
  const groups = new Map<string, Issue[]>();
  for (const i of issues) {
    if (CLI_ONLY.has(i.code)) continue;
    const key = `${i.code}\u0000${i.file}`;
    const g = groups.get(key);
    if (g) g.push(i);
    else groups.set(key, [i]);
  }
  return (
    <ul class="issues">
      {[...groups.values()].map((g) => {
        const i = g[0] as Issue;
        if (g.length === 1)
          return (
            <li class={i.severity}>
              <code>{i.code}</code>{' '}
              <ValueText lang={lang} v={`${i.file}${i.line !== undefined ? `:${i.line}` : ''}`} />
              {i.id !== undefined ? (
                <>
                  {` (${w.id} `}
                  <ValueText lang={lang} v={i.id} />)
                </>
              ) : (
                ''
              )}
              : <IssueWords lang={lang} i={i} />
              {i.found !== undefined ? (
                <>
                  {`; ${w.found} `}
                  <ValueText lang={lang} v={i.found} />
                </>
              ) : (
                ''
              )}
            </li>
          );
        const ids = g.every((x) => x.id !== undefined);
        const named = g.slice(0, SHOWN).map((x) => (ids ? x.id : x.line !== undefined ? String(x.line) : ''));
        const more = g.length - SHOWN;
        return (
          <li class={i.severity}>
            <code>{i.code}</code> <ValueText lang={lang} v={i.file} />{' '}
            {w.times(g.length, i.line !== undefined ? ` (${w.line} ${i.line})` : '')}
            {i.id !== undefined ? (
              <>
                {` (${w.id} `}
                <ValueText lang={lang} v={i.id} />)
              </>
            ) : (
              ''
            )}
            : <IssueWords lang={lang} i={i} />
            {named.some((n) => n !== '') ? (
              <>
                {` — ${ids ? w.ids : w.lines} `}
                <ValueText lang={lang} v={named.join(', ')} />
                {more > 0 ? w.more(more) : ''}
              </>
            ) : (
              ''
            )}
          </li>
        );
      })}
    </ul>
  );
};

export const ErrorPage: FC<{ ctx: PageContext; title: string; message: string }> = ({
  ctx,
  title,
  message,
}) => (
  <Layout ctx={ctx} title={title}>
    <h1>{title}</h1>
    <p>{message}</p>
  </Layout>
);
