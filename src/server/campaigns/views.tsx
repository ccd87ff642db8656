/** Pages of human evaluation campaigns: the admin's list, one campaign's progress and agreement, and the annotator's page. */

import { raw } from 'hono/html';
import type { Child, FC } from 'hono/jsx';
import type { AnnotateData } from '../../browser/annotate-data.js';
import { TASKS } from '../../tasks/registry.js';
import { CsrfField, f2, href, Layout, type PageContext } from '../views/layout.js';
import type { AnnotatorView, Campaign, CampaignDetail, Invitation } from './service.js';

/** Every task and split a campaign can annotate: the test sets and the closed tests. */
const KINDS_OF_SPLIT = TASKS.flatMap((t) =>
  (['test', 'private_test'] as const)
    .filter((s) => (t.splits as readonly string[]).includes(s))
    .map((s) => [t.name, s] as const),
);

const pct = (x: number | null | undefined): string =>
  x === null || x === undefined ? '–' : (100 * x).toFixed(1);
const num = (x: number | null | undefined, digits = 3): string =>
  x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits);

export const CampaignsPage: FC<{ ctx: PageContext; campaigns: Campaign[]; origin: string }> = ({
  ctx,
  campaigns,
  origin,
}) => (
  <Layout ctx={ctx} title="Campaigns">
    <h1>Human evaluation campaigns</h1>
    <div class="table-wrap">
      <table class="sortable">
        <thead>
          <tr>
            {['Name', 'Task', 'Split', 'Items', 'Overlap', 'Status', 'Created', 'Human row'].map((h) => (
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
              <td>{c.split}</td>
              <td class="num">{String((JSON.parse(c.items) as string[]).length)}</td>
              <td class="num">{String(c.overlap)}</td>
              <td>{c.status}</td>
              <td>{c.created_at.slice(0, 16).replace('T', ' ')}</td>
              <td>
                {c.submission_id ? <a href={href(ctx, `/submissions/${c.submission_id}`)}>published</a> : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
    <h2>New campaign</h2>
    <form method="post" action="/admin/campaigns" class="upload">
      <CsrfField ctx={ctx} />
      <label>
        Name
        <input name="name" maxlength={200} placeholder="RuMedNLI, doctors, round 1" />
      </label>
      <label>
        Task and split
        <select name="task_split" required>
          {KINDS_OF_SPLIT.map(([task, split]) => (
            <option value={`${task}/${split}`}>
              {task} — {split}
            </option>
          ))}
        </select>
      </label>
      <label>
        Items (a number, or all)
        <input name="items" value="all" required pattern="all|[1-9][0-9]*" />
      </label>
      <label>
        Annotators
        <input name="annotators" type="number" min={1} max={200} value="3" required />
      </label>
      <label>
        Overlap (annotators per item; 1 is the paper's procedure)
        <input name="overlap" type="number" min={1} max={200} value="1" required />
      </label>
      <label>
        Seed
        <input name="seed" type="number" min={0} value="0" required />
      </label>
      <label>
        Address annotators reach (for the links)
        <input name="base_url" value={origin} required />
      </label>
      <label>
        Guidelines (empty: the task's own, in Russian)
        <textarea name="guidelines" rows={4} maxlength={20000}></textarea>
      </label>
      <button type="submit">Create and show the invitation links</button>
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
      <p>
        Send each annotator their own link. The links are shown <strong>once</strong>: only their hashes are
        stored.
      </p>
    </div>
    <table class="links">
      <tbody>
        {links.map((l) => (
          <tr>
            <th scope="row">{l.label}</th>
            <td>
              <code>{l.url}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    <p>
      <a href={href(ctx, `/admin/campaigns/${campaign.id}`)}>Progress and results</a>
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
  const labelOf = (i: number) => d.annotators[i]?.label ?? String(i + 1);
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
        {c.task} · {c.split} · {String(d.items)} items · overlap {String(c.overlap)} · seed {String(c.seed)} ·{' '}
        {c.status} · answers combined by{' '}
        {d.rule === 'majority' ? 'the majority (odd overlap)' : "the first annotator's answer"}
      </p>
      <div class="actions">
        <form method="post" action={`/admin/campaigns/${c.id}/publish`} class="inline">
          <CsrfField ctx={ctx} />
          <button type="submit">{c.submission_id ? 'Publish again' : 'Publish the human row'}</button>
        </form>{' '}
        <form
          method="post"
          action={`/admin/campaigns/${c.id}/${c.status === 'open' ? 'close' : 'reopen'}`}
          class="inline"
        >
          <CsrfField ctx={ctx} />
          <button type="submit" class={c.status === 'open' ? 'danger' : undefined}>
            {c.status === 'open' ? 'Close the campaign' : 'Reopen'}
          </button>
        </form>{' '}
        <a href={`/admin/campaigns/${c.id}/answers.jsonl`}>Export the answers (JSONL)</a>
        {c.submission_id ? (
          <>
            {' '}
            · <a href={href(ctx, `/submissions/${c.submission_id}`)}>the human row</a>
          </>
        ) : (
          ''
        )}
      </div>
      <Section title="Progress">
        <p>
          Coverage: {String(d.coverage.answered)} of {String(d.coverage.sampled)} sampled items have an answer
          ({pct(d.coverage.answered / Math.max(1, d.coverage.sampled))}%).
        </p>
        <div class="table-wrap">
          <table class="progress">
            <thead>
              <tr>
                {['Annotator', 'Assigned', 'Answered', 'Skipped', 'Median s/item', ''].map((h) => (
                  <th scope="col">{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {d.annotators.map((p) => (
                <tr>
                  <th scope="row">{p.label}</th>
                  <td class="num">{String(p.assigned)}</td>
                  <td class="num">{String(p.answered)}</td>
                  <td class="num">{String(p.skipped)}</td>
                  <td class="num">{num(p.median_seconds, 1)}</td>
                  <td>
                    {p.revoked ? (
                      'revoked'
                    ) : (
                      <form
                        method="post"
                        action={`/admin/campaigns/${c.id}/annotators/${p.id}/revoke`}
                        class="inline"
                      >
                        <CsrfField ctx={ctx} />
                        <button type="submit" class="danger">
                          revoke link
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
      <Section title="Agreement">
        <p class="note">On the {String(a.items)} item(s) answered by two annotators or more.</p>
        <table class="meta" id="agreement">
          <tbody>
            <tr>
              <th scope="row">Observed agreement</th>
              <td>{pct(a.observed)}%</td>
            </tr>
            {a.fleiss_kappa !== undefined && c.overlap > 1 ? (
              <tr>
                <th scope="row">Fleiss' kappa</th>
                <td>{num(a.fleiss_kappa)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.krippendorff_alpha !== null ? (
              <tr>
                <th scope="row">Krippendorff's alpha (nominal)</th>
                <td>{num(a.krippendorff_alpha)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.set_overlap !== undefined ? (
              <tr>
                <th scope="row">Set overlap of the answers (Jaccard)</th>
                <td>{num(a.set_overlap)}</td>
              </tr>
            ) : (
              ''
            )}
            {a.entity_f1 !== undefined ? (
              <tr>
                <th scope="row">Entity-level F1 between annotators</th>
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
                  {['Pair', 'Items', 'Observed %', "Cohen's kappa", 'Set overlap', 'Entity F1 %'].map((h) => (
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
        <Section title="Each annotator against the gold (public test split)">
          <div class="table-wrap">
            <table class="scores">
              <thead>
                <tr>
                  {['Annotator', 'Answered', 'Accuracy %', 'Hit@3 %', 'Entity F1 %'].map((h) => (
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
        <p class="note">A closed test: no per-annotator figures, only the aggregate of the published row.</p>
      )}
      <Section title="Guidelines">
        <form method="post" action={`/admin/campaigns/${c.id}/guidelines`} class="upload">
          <CsrfField ctx={ctx} />
          <textarea name="guidelines" rows={8} maxlength={20000}>
            {c.guidelines}
          </textarea>
          <button type="submit">Save the guidelines</button>
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
