/** Pages of human evaluation campaigns: the admin's list, one campaign's progress and agreement, and the annotator's page. */

import { raw } from 'hono/html';
import type { Child, FC } from 'hono/jsx';
import type { AnnotateData } from '../../browser/annotate-data.js';
import { TASKS } from '../../tasks/registry.js';
import { CsrfField, f2, href, Layout, type PageContext, When } from '../views/layout.js';
import type { AnnotatorView, Campaign, CampaignDetail, Invitation } from './service.js';

/** Every task and split a campaign can annotate: the test sets and the closed tests. */
const KINDS_OF_SPLIT = TASKS.flatMap((t) =>
  (['test', 'private_test'] as const)
    .filter((s) => (t.splits as readonly string[]).includes(s))
    .map((s) => [t.name, s] as const),
);

/** An annotator's label in the page's language: the service stores "annotator N" where the admin gave none. */
const annotatorLabel = (ctx: PageContext, label: string): string => {
  const n = /^annotator (\d+)$/.exec(label)?.[1];
  return n === undefined ? label : ctx.t.campaigns.annotatorN(n);
};

const pct = (x: number | null | undefined): string =>
  x === null || x === undefined ? '–' : (100 * x).toFixed(1);
const num = (x: number | null | undefined, digits = 3): string =>
  x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits);

export const CampaignsPage: FC<{ ctx: PageContext; campaigns: Campaign[]; origin: string }> = ({
  ctx,
  campaigns,
  origin,
}) => (
  <Layout ctx={ctx} title={ctx.t.campaigns.title}>
    <h1>{ctx.t.campaigns.heading}</h1>
    <div class="table-wrap">
      <table class="sortable">
        <thead>
          <tr>
            {ctx.t.campaigns.columns.map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {campaigns.map((c) => (
            <tr>
              <th scope="row">
                <a href={href(ctx, `/admin/campaigns/${c.id}`)}>{c.name}</a>
              </th>
              <td>{c.task}</td>
              <td>{ctx.r.splitName(c.split)}</td>
              <td class="num">{String((JSON.parse(c.items) as string[]).length)}</td>
              <td class="num">{String(c.overlap)}</td>
              <td>{ctx.t.adminWords.campaign[c.status] ?? c.status}</td>
              <td>
                <When ctx={ctx} iso={c.created_at} />
              </td>
              <td>
                {c.submission_id ? (
                  <a href={href(ctx, `/submissions/${c.submission_id}`)}>{ctx.t.campaigns.published}</a>
                ) : (
                  ''
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
    <h2>{ctx.t.campaigns.newCampaign}</h2>
    <form method="post" action="/admin/campaigns" class="upload">
      <CsrfField ctx={ctx} />
      <label>
        {ctx.t.campaigns.name}
        <input name="name" maxlength={200} placeholder={ctx.t.campaigns.namePlaceholder} />
      </label>
      <label>
        {ctx.t.campaigns.taskSplit}
        <select name="task_split" required>
          {KINDS_OF_SPLIT.map(([task, split]) => (
            <option value={`${task}/${split}`}>
              {task} — {ctx.r.splitName(split)}
            </option>
          ))}
        </select>
      </label>
      <label>
        {ctx.t.campaigns.items}
        <input
          name="items"
          value={ctx.t.campaigns.allItems}
          required
          pattern={`all|${ctx.t.campaigns.allItems}|[1-9][0-9]*`}
        />
      </label>
      <label>
        {ctx.t.campaigns.annotators}
        <input name="annotators" type="number" min={1} max={200} value="3" required />
      </label>
      <label>
        {ctx.t.campaigns.overlap}
        <input name="overlap" type="number" min={1} max={200} value="1" required />
      </label>
      <label>
        {ctx.t.campaigns.seed}
        <input name="seed" type="number" min={0} value="0" required />
      </label>
      <label>
        {ctx.t.campaigns.baseUrl}
        <input name="base_url" value={origin} required />
      </label>
      <label>
        {ctx.t.campaigns.guidelinesEmpty}
        <textarea name="guidelines" rows={4} maxlength={20000}></textarea>
      </label>
      <button type="submit">{ctx.t.campaigns.create}</button>
    </form>
  </Layout>
);

export const InvitationsPage: FC<{
  ctx: PageContext;
  campaign: Campaign;
  links: (Invitation & { url: string })[];
}> = ({ ctx, campaign, links }) => (
  <Layout ctx={ctx} title={campaign.name}>
    <h1>{campaign.name}</h1>
    <div class="notice" role="status">
      <p>{ctx.t.campaigns.linksOnce}</p>
    </div>
    <table class="links">
      <tbody>
        {links.map((l) => (
          <tr>
            <th scope="row">{annotatorLabel(ctx, l.label)}</th>
            <td>
              <code>{l.url}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    <p>
      <a href={href(ctx, `/admin/campaigns/${campaign.id}`)}>{ctx.t.campaigns.progressLink}</a>
    </p>
  </Layout>
);

const Section: FC<{ title: string; children?: Child }> = ({ title, children }) => (
  <section>
    <h2>{title}</h2>
    {children}
  </section>
);

export const CampaignPage: FC<{ ctx: PageContext; d: CampaignDetail; notice?: string }> = ({
  ctx,
  d,
  notice,
}) => {
  const c = d.campaign;
  const a = d.agreement;
  const labelOf = (i: number) => annotatorLabel(ctx, d.annotators[i]?.label ?? String(i + 1));
  return (
    <Layout ctx={ctx} title={c.name}>
      <h1>{c.name}</h1>
      {notice ? (
        <div class="notice" role="status">
          {notice}
        </div>
      ) : (
        ''
      )}
      <p class="note">
        {c.task} · {ctx.r.splitName(c.split)} ·{' '}
        {ctx.t.campaigns.summary(
          d.items,
          c.overlap,
          c.seed,
          ctx.t.adminWords.campaign[c.status] ?? c.status,
          d.rule === 'majority',
        )}
      </p>
      <div class="actions">
        <form method="post" action={`/admin/campaigns/${c.id}/publish`} class="inline">
          <CsrfField ctx={ctx} />
          <button type="submit">
            {c.submission_id ? ctx.t.campaigns.publishAgain : ctx.t.campaigns.publish}
          </button>
        </form>{' '}
        <form
          method="post"
          action={`/admin/campaigns/${c.id}/${c.status === 'open' ? 'close' : 'reopen'}`}
          class="inline"
        >
          <CsrfField ctx={ctx} />
          <button type="submit" class={c.status === 'open' ? 'danger' : undefined}>
            {c.status === 'open' ? ctx.t.campaigns.close : ctx.t.campaigns.reopen}
          </button>
        </form>{' '}
        <a href={`/admin/campaigns/${c.id}/answers.jsonl`}>{ctx.t.campaigns.exportAnswers}</a>
        {c.submission_id ? (
          <>
            {' '}
            · <a href={href(ctx, `/submissions/${c.submission_id}`)}>{ctx.t.campaigns.humanRow}</a>
          </>
        ) : (
          ''
        )}
      </div>
      <Section title={ctx.t.campaigns.progress}>
        <p>
          {ctx.t.campaigns.coverage(
            d.coverage.answered,
            d.coverage.sampled,
            pct(d.coverage.answered / Math.max(1, d.coverage.sampled)),
          )}
        </p>
        <div class="table-wrap">
          <table class="progress">
            <thead>
              <tr>
                {ctx.t.campaigns.progressColumns.map((h) => (
                  <th scope="col">{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {d.annotators.map((p) => (
                <tr>
                  <th scope="row">{annotatorLabel(ctx, p.label)}</th>
                  <td class="num">{String(p.assigned)}</td>
                  <td class="num">{String(p.answered)}</td>
                  <td class="num">{String(p.skipped)}</td>
                  <td class="num">{num(p.median_seconds, 1)}</td>
                  <td>
                    {p.revoked ? (
                      ctx.t.campaigns.revoked
                    ) : (
                      <form
                        method="post"
                        action={`/admin/campaigns/${c.id}/annotators/${p.id}/revoke`}
                        class="inline"
                      >
                        <CsrfField ctx={ctx} />
                        <button type="submit" class="danger">
                          {ctx.t.campaigns.revoke}
                        </button>
                      </form>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
      <Section title={ctx.t.campaigns.agreement}>
        <p class="note">{ctx.t.campaigns.agreementOn(a.items)}</p>
        <table class="meta" id="agreement">
          <tbody>
            <tr>
              <th scope="row">{ctx.t.campaigns.observed}</th>
              <td>{pct(a.observed)}%</td>
            </tr>
            {a.fleiss_kappa !== undefined && c.overlap > 1 ? (
              <tr>
                <th scope="row">{ctx.t.campaigns.fleiss}</th>
                <td>{num(a.fleiss_kappa)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.krippendorff_alpha !== null ? (
              <tr>
                <th scope="row">{ctx.t.campaigns.krippendorff}</th>
                <td>{num(a.krippendorff_alpha)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.set_overlap !== undefined ? (
              <tr>
                <th scope="row">{ctx.t.campaigns.setOverlap}</th>
                <td>{num(a.set_overlap)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.entity_f1 !== undefined ? (
              <tr>
                <th scope="row">{ctx.t.campaigns.entityF1}</th>
                <td>{pct(a.entity_f1)}%</td>
              </tr>
            ) : (
              ''
            )}
          </tbody>
        </table>
        {a.pairs.length > 0 ? (
          <div class="table-wrap">
            <table class="pairs">
              <thead>
                <tr>
                  {ctx.t.campaigns.pairColumns.map((h) => (
                    <th scope="col">{h}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {a.pairs.map((p) => (
                  <tr>
                    <th scope="row">
                      {labelOf(p.a)} – {labelOf(p.b)}
                    </th>
                    <td class="num">{String(p.n)}</td>
                    <td class="num">{pct(p.observed)}</td>
                    <td class="num">{num(p.kappa)}</td>
                    <td class="num">{num(p.set_overlap)}</td>
                    <td class="num">{pct(p.entity_f1)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          ''
        )}
      </Section>
      {d.scores ? (
        <Section title={ctx.t.campaigns.againstGold}>
          <div class="table-wrap">
            <table class="scores">
              <thead>
                <tr>
                  {ctx.t.campaigns.scoreColumns.map((h) => (
                    <th scope="col">{h}</th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {d.scores.map((s) => (
                  <tr>
                    <th scope="row">{labelOf(s.annotator)}</th>
                    <td class="num">{String(s.answered)}</td>
                    <td class="num">{f2(s.accuracy)}</td>
                    <td class="num">{f2(s.hit_at_3)}</td>
                    <td class="num">{f2(s.entity_f1)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Section>
      ) : (
        <p class="note">{ctx.t.campaigns.closedNote}</p>
      )}
      <Section title={ctx.t.campaigns.guidelines}>
        <form method="post" action={`/admin/campaigns/${c.id}/guidelines`} class="upload">
          <CsrfField ctx={ctx} />
          <textarea name="guidelines" rows={8} maxlength={20000}>
            {c.guidelines}
          </textarea>
          <button type="submit">{ctx.t.campaigns.saveGuidelines}</button>
        </form>
      </Section>
    </Layout>
  );
};

/** The annotator's page: a shell that /static/annotate.js brings to life with the data embedded in it. */
export const AnnotatePage: FC<{ view: AnnotatorView; token: string }> = ({ view, token }) => {
  const data: AnnotateData = { ...view, token };
  return (
    <html lang="ru">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <meta name="referrer" content="no-referrer" />
        <title>{`${view.campaign.name} · разметка`}</title>
        <link rel="stylesheet" href="/static/style.css" />
        <script type="module" src="/static/annotate.js"></script>
      </head>
      <body class="annotate">
        <header class="annotate-head">
          <strong>{view.campaign.name}</strong> · разметчик {view.annotator} · <span id="progress"></span>
        </header>
        <details class="guidelines" open={Object.keys(view.answers).length === 0}>
          <summary>Инструкция</summary>
          <p>{view.campaign.guidelines}</p>
        </details>
        <noscript>
          <p class="alert">Для разметки нужен JavaScript: включите его в браузере.</p>
        </noscript>
        <main id="app" aria-live="polite"></main>
        <p id="save-status" class="save-status" role="status"></p>
        <script type="application/json" id="annotate-data">
          {raw(JSON.stringify(data).replace(/</g, '\\u003c'))}
        </script>
      </body>
    </html>
  );
};

export const AnnotateClosedPage: FC<{ message: string }> = ({ message }) => (
  <html lang="ru">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Разметка</title>
      <link rel="stylesheet" href="/static/style.css" />
    </head>
    <body class="annotate">
      <h1>Ссылка не действует</h1>
      <p>{message}</p>
    </body>
  </html>
);
