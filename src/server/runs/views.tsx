/** The runs pages: every plan and evaluation with its progress; one run's cells (workers and failures for the admin). */
import type { FC } from 'hono/jsx';
import type { Endpoint } from '../../workers/endpoints.js';
import type { ListedPlan as Listed, PlanStatus } from '../../workers/plans.js';
import type { BoardName } from '../db/schema.js';
import { CsrfField, href, Layout, type PageContext, When } from '../views/layout.js';
import { reasonOf } from './reasons.js';

const pct = (done: number, total: number) =>
  total > 0 ? `${done}/${total} (${((100 * done) / total).toFixed(0)}%)` : `${done}/–`;
const left = (t: PageContext['t']['runs'], s: number | null) =>
  s === null ? '–' : s >= 60 ? `${Math.round(s / 60)} ${t.minutes}` : `${Math.round(s)} ${t.seconds}`;

/** A failure as the viewer may see it: the whole text for the admin, its class for everybody else. */
const problem = (ctx: PageContext, text: string | null | undefined) =>
  text ? (ctx.admin ? text : ctx.t.runs.reasons[reasonOf(text)]) : '';

/** A platform evaluation is stored as "model · closed": the board word in the page's language. */
const shownName = (ctx: PageContext, run: { name: string; kind: string }): string => {
  const m = run.kind === 'evaluation' ? /^(.*) · (closed|public|both)$/.exec(run.name) : null;
  if (!m) return run.name;
  const boards = {
    closed: ctx.t.closedBoard,
    public: ctx.t.publicBoard,
    both: `${ctx.t.closedBoard} + ${ctx.t.publicBoard}`,
  };
  return `${m[1]} · ${boards[m[2] as keyof typeof boards]}`;
};

const Status: FC<{ ctx: PageContext; status: string }> = ({ ctx, status }) => (
  <span class={`tag ${status === 'done' ? 'ok' : status === 'failed' ? 'warn' : ''}`}>
    {ctx.t.runs.statuses[status] ?? status}
  </span>
);

export const RunsPage: FC<{
  ctx: PageContext;
  runs: Listed[] | undefined;
  endpoints: Endpoint[];
  /** Where the next (older) page starts, when there is one. */
  older?: string;
}> = ({ ctx, runs, endpoints, older }) => {
  const t = ctx.t.runs;
  return (
    <Layout ctx={ctx} title={t.title}>
      <h1>{t.heading}</h1>
      <p class="note">{t.note}</p>
      {runs === undefined ? (
        <p class="note">
          {t.unavailable} <code>serve --db postgres://…</code>
        </p>
      ) : runs.length === 0 ? (
        <p>{t.none}</p>
      ) : (
        <div class="table-wrap">
          <table class="board runs">
            <thead>
              <tr>
                {t.columns.map((h) => (
                  <th scope="col">{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr>
                  <td>
                    <a href={href(ctx, `/runs/${r.id}`)}>{shownName(ctx, r)}</a>
                  </td>
                  <td>{t.kinds[r.kind] ?? r.kind}</td>
                  <td>
                    <Status ctx={ctx} status={r.status} />
                  </td>
                  <td>{pct(r.done, r.total)}</td>
                  <td>
                    <When ctx={ctx} iso={r.created_at} />
                  </td>
                  <td class="problem">{problem(ctx, r.error)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {older ? (
        <p>
          <a href={href(ctx, `/runs?before=${encodeURIComponent(older)}`)}>{t.older}</a>
        </p>
      ) : (
        ''
      )}
      {ctx.admin && runs !== undefined ? (
        <form method="post" action={href(ctx, '/admin/evaluations')} class="inline">
          <h2>{t.queue}</h2>
          <CsrfField ctx={ctx} />
          <label>
            {t.endpoint}{' '}
            <select name="endpoint" required>
              {endpoints.map((e) => (
                <option value={e.name}>{`${e.name} (${e.model})`}</option>
              ))}
            </select>
          </label>{' '}
          <label>
            {t.board}{' '}
            <select name="boards">
              <option value="closed">{ctx.t.closedBoard}</option>
              <option value="public">{ctx.t.publicBoard}</option>
              <option value="both">{`${ctx.t.closedBoard} + ${ctx.t.publicBoard}`}</option>
            </select>
          </label>{' '}
          <button type="submit">{ctx.t.submit}</button>
        </form>
      ) : (
        ''
      )}
    </Layout>
  );
};

export const RunPage: FC<{
  ctx: PageContext;
  run: PlanStatus;
  entries: Partial<Record<BoardName, string>>;
  /** The admin's view of an evaluation request: who asked, and whom its entries go to. */
  request?: { requested_by: string; credited_to: string } | undefined;
}> = ({ ctx, run, entries, request }) => {
  const t = ctx.t.runs;
  return (
    <Layout ctx={ctx} title={`${t.title}: ${shownName(ctx, run)}`}>
      <h1>{shownName(ctx, run)}</h1>
      <p>
        <Status ctx={ctx} status={run.status} /> {t.kinds[run.kind] ?? run.kind} ·{' '}
        <When ctx={ctx} iso={run.created_at} /> · <code>{run.id}</code>
      </p>
      {ctx.admin && request ? (
        <p class="request">{`${t.requestedBy}: ${request.requested_by}; ${t.creditedTo}: ${request.credited_to}`}</p>
      ) : (
        ''
      )}
      {ctx.admin && run.status === ('pending' as string) ? (
        <div class="actions">
          <form method="post" action={href(ctx, `/admin/evaluations/${run.id}/approve`)} class="inline">
            <CsrfField ctx={ctx} />
            <button type="submit">{t.approve}</button>
          </form>{' '}
          <form method="post" action={href(ctx, `/admin/evaluations/${run.id}/reject`)} class="inline">
            <CsrfField ctx={ctx} />
            <button type="submit">{t.reject}</button>
          </form>
        </div>
      ) : (
        ''
      )}
      <div class="table-wrap">
        <table class="board runs">
          <thead>
            <tr>
              {t.cells.map((h) => (
                <th scope="col">{h}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {run.cells.map((c) => (
              <tr>
                <td>{c.cell}</td>
                <td class="problem">
                  <Status ctx={ctx} status={c.status} />
                  {c.error ? ` ${problem(ctx, c.error)}` : ''}
                </td>
                <td>{pct(c.requests.done, c.requests.total)}</td>
                <td>{c.requests.failed > 0 ? String(c.requests.failed) : ''}</td>
                <td>{c.rate > 0 ? `${c.rate.toFixed(1)}${t.perSecond}` : '–'}</td>
                <td>{c.status === 'running' || c.status === 'queued' ? left(t, c.eta_s) : '–'}</td>
                <td>{ctx.admin ? c.workers.join(', ') : String(c.workers.length)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {Object.entries(entries).length > 0 ? (
        <p>
          {t.entry}:{' '}
          {Object.entries(entries).map(([board, id]) => (
            <a href={href(ctx, `/submissions/${id}`)}>
              {board === 'closed' ? ctx.t.closedBoard : ctx.t.publicBoard}{' '}
            </a>
          ))}
        </p>
      ) : (
        ''
      )}
      {ctx.admin ? (
        <>
          <h2>{t.workers}</h2>
          {run.workers.length === 0 ? (
            <p>{t.none_}</p>
          ) : (
            <ul>
              {run.workers.map((w) => (
                <li>{`${w.name} (${w.host}), ${w.cells.join(', ')}, ${w.last_seen}`}</li>
              ))}
            </ul>
          )}
          <h2>{t.failures}</h2>
          {run.cells.every((c) => c.failures.length === 0) ? (
            <p>{t.none_}</p>
          ) : (
            <ul class="problem">
              {run.cells.flatMap((c) => c.failures.map((f) => <li>{`${c.cell}: ${f.n}× ${f.reason}`}</li>))}
            </ul>
          )}
        </>
      ) : (
        ''
      )}
    </Layout>
  );
};
