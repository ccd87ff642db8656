/** The leaderboard's pages: boards, a submission, a comparison, the upload form and its answer, errors. */
import { raw } from 'hono/html';
import type { FC } from 'hono/jsx';
import { deltaRows } from '../../report/build.js';
import { pValue, signed } from '../../report/format.js';
import type { PaperRow } from '../../report/paper.js';
import type { ComparisonResult } from '../../scoring/compare.js';
import { getTask } from '../../tasks/registry.js';
import type { MetricName } from '../../tasks/types.js';
import type { Entry } from '../boards/entries.js';
import type { BoardName } from '../db/schema.js';
import type { UploadAnswer } from '../leaderboard.js';
import { BOARD_TASKS } from '../score-upload.js';
import {
  CsrfField,
  ciText,
  f2,
  href,
  IssueList,
  Layout,
  type PageContext,
  SubmissionFields,
} from './layout.js';

const metricCell = (metrics: Partial<Record<string, number>> | undefined, task: string) =>
  metrics
    ? getTask(task)
        .metrics.map((m: MetricName) => f2(metrics[m]))
        .join('/')
    : '–';

const Tags: FC<{ e: Entry; ctx: PageContext }> = ({ e, ctx }) => (
  <span class="tags">
    <span class="tag">{e.kind}</span>
    {e.params ? <span class="tag">{e.params}</span> : ''}
    {e.open_weights ? <span class="tag">open</span> : ''}
    {e.verified ? <span class="tag ok">{ctx.t.verified}</span> : ''}
    {e.flagged ? <span class="tag warn">{ctx.t.flagged}</span> : ''}
    {e.hidden ? <span class="tag warn">hidden</span> : ''}
    {e.coverage ? (
      <span class="tag" title="items answered of those sampled">
        {`${e.coverage.answered}/${e.coverage.sampled} items`}
      </span>
    ) : (
      ''
    )}
  </span>
);

export const BoardPage: FC<{
  ctx: PageContext;
  board: BoardName;
  entries: Entry[];
  paperRows: readonly PaperRow[];
}> = ({ ctx, board, entries, paperRows }) => {
  const tasks = BOARD_TASKS[board];
  const title = board === 'public' ? ctx.t.publicBoard : ctx.t.closedBoard;
  // The paper's rows stand among the entries where their overall puts them; entries are numbered, they are not.
  type Row =
    | { kind: 'paper'; p: PaperRow; at: number }
    | { kind: 'entry'; e: Entry; rank?: number; at: number };
  const ranked: Row[] = entries.map((e, i) => ({
    kind: 'entry',
    e,
    at: e.overall ?? -1,
    ...(e.overall !== null ? { rank: i + 1 } : {}),
  }));
  const rows: Row[] = [...paperRows.map((p): Row => ({ kind: 'paper', p, at: p.overall })), ...ranked].sort(
    (a, b) => b.at - a.at,
  );
  return (
    <Layout ctx={ctx} title={title}>
      <h1>{title}</h1>
      <p class="note">{board === 'public' ? ctx.t.publicNote : ctx.t.closedNote}</p>
      <p class="note">
        {ctx.t.ciHint} <a href={`/board/${board}.csv`}>{ctx.t.exportCsv}</a> ·{' '}
        <a href={`/api/boards/${board}`}>{ctx.t.exportJson}</a>
      </p>
      <div class="table-wrap">
        <table class="sortable board" id="board">
          <thead>
            <tr>
              <th scope="col" class="num">
                {ctx.t.rank}
              </th>
              <th scope="col">{ctx.t.model}</th>
              <th scope="col">{ctx.t.team}</th>
              {tasks.map((t) => (
                <th scope="col" class="num">
                  {t}
                </th>
              ))}
              <th scope="col" class="num">
                {ctx.t.overall}
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) =>
              row.kind === 'paper' ? (
                <tr class="reference">
                  <td class="num"></td>
                  <th scope="row">
                    {row.p.model} <span class="tag">{ctx.t.reference}</span>
                  </th>
                  <td>Blinov et al., 2022</td>
                  {tasks.map((t) => (
                    <td class="num">{metricCell(row.p.tasks[t], t)}</td>
                  ))}
                  <td class="num">{f2(row.p.overall)}</td>
                </tr>
              ) : (
                <tr class="entry" data-id={row.e.id}>
                  <td class="num">{row.rank ?? ''}</td>
                  <th scope="row">
                    <a href={href(ctx, `/submissions/${row.e.id}`)}>{row.e.model}</a>{' '}
                    <Tags e={row.e} ctx={ctx} />
                  </th>
                  <td>{row.e.team || <span class="note">{ctx.t.anonymous}</span>}</td>
                  {tasks.map((t) => {
                    const c = row.e.tasks[t];
                    return (
                      <td
                        class="num"
                        title={
                          c?.score_ci ? `${ctx.r.score} ${f2(c.score)} ${ciText(c.score_ci)}` : undefined
                        }
                      >
                        {metricCell(c?.metrics, t)}
                        {c?.score_ci ? <small class="ci">{ciText(c.score_ci)}</small> : ''}
                      </td>
                    );
                  })}
                  <td class="num">
                    <strong>{f2(row.e.overall)}</strong>
                    {row.e.overall_ci ? <small class="ci">{ciText(row.e.overall_ci)}</small> : ''}
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
      {entries.length === 0 ? <p class="note">{ctx.t.empty}</p> : ''}
    </Layout>
  );
};

const MetaTable: FC<{ ctx: PageContext; e: Entry }> = ({ ctx, e }) => (
  <table class="meta">
    <tbody>
      <tr>
        <th scope="row">{ctx.t.team}</th>
        <td>{e.team || ctx.t.anonymous}</td>
      </tr>
      <tr>
        <th scope="row">{ctx.t.kind}</th>
        <td>
          <Tags e={e} ctx={ctx} />
        </td>
      </tr>
      <tr>
        <th scope="row">{ctx.t.board}</th>
        <td>{e.board === 'public' ? ctx.t.publicBoard : ctx.t.closedBoard}</td>
      </tr>
      <tr>
        <th scope="row">{ctx.t.submitted}</th>
        <td>{e.created_at}</td>
      </tr>
      {e.link ? (
        <tr>
          <th scope="row">{ctx.t.link}</th>
          <td>
            <a href={e.link} rel="nofollow noopener noreferrer">
              {e.link}
            </a>
          </td>
        </tr>
      ) : (
        ''
      )}
      {e.duplicate_of ? (
        <tr>
          <th scope="row">{ctx.t.duplicateOf}</th>
          <td>
            <a href={href(ctx, `/submissions/${e.duplicate_of}`)}>{e.duplicate_of}</a>
          </td>
        </tr>
      ) : (
        ''
      )}
    </tbody>
  </table>
);

export interface ChartBlock {
  id: string;
  title: string;
  description: string;
  svg: string;
}

const Charts: FC<{ charts: ChartBlock[] }> = ({ charts }) => (
  <>
    {charts.map((c) => (
      <figure id={c.id}>
        <div class="chart">{raw(c.svg)}</div>
        {c.description.length <= 400 ? <figcaption>{c.description}</figcaption> : ''}
      </figure>
    ))}
  </>
);

export const SubmissionPage: FC<{
  ctx: PageContext;
  e: Entry;
  charts: ChartBlock[];
  others: Entry[];
}> = ({ ctx, e, charts, others }) => {
  const rows: string[][] = [];
  for (const [task, c] of Object.entries(e.tasks)) {
    for (const m of getTask(task).metrics)
      rows.push([task, String(c.n), m, f2(c.metrics[m]), ciText(c.ci[m]) || '–']);
    if (getTask(task).metrics.length > 1)
      rows.push([task, String(c.n), ctx.r.score, f2(c.score), ciText(c.score_ci) || '–']);
  }
  rows.push([ctx.t.overall, '', ctx.r.score, f2(e.overall), ciText(e.overall_ci) || '–']);
  return (
    <Layout ctx={ctx} title={e.model}>
      <h1>{e.model}</h1>
      {e.description ? <p class="description">{e.description}</p> : ''}
      <MetaTable ctx={ctx} e={e} />
      <h2>{ctx.t.metrics}</h2>
      <div class="table-wrap">
        <table class="sortable">
          <thead>
            <tr>
              <th scope="col">{ctx.r.task}</th>
              <th scope="col" class="num">
                n
              </th>
              <th scope="col">{ctx.r.metric}</th>
              <th scope="col" class="num">
                {ctx.r.value}
              </th>
              <th scope="col" class="num">
                95% CI
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <th scope="row">{r[0]}</th>
                <td class="num">{r[1]}</td>
                <td>{r[2]}</td>
                <td class="num">{r[3]}</td>
                <td class="num">{r[4]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {others.length > 0 ? (
        <form method="get" action="/compare" class="inline">
          <input type="hidden" name="a" value={e.id} />
          <input type="hidden" name="lang" value={ctx.lang} />
          <label>
            {ctx.t.compareWith}{' '}
            <select name="b">
              {others.map((o) => (
                <option value={o.id}>
                  {o.model} ({f2(o.overall)})
                </option>
              ))}
            </select>
          </label>{' '}
          <button type="submit">{ctx.t.compare}</button>
        </form>
      ) : (
        ''
      )}
      <Charts charts={charts} />
    </Layout>
  );
};

export const ComparePage: FC<{
  ctx: PageContext;
  a: Entry;
  b: Entry;
  comparison: ComparisonResult | null;
  charts: ChartBlock[];
}> = ({ ctx, a, b, comparison, charts }) => {
  const rows: string[][] = [];
  if (comparison) {
    for (const d of deltaRows(comparison)) {
      rows.push([
        d.task === 'RuMedOverall' ? 'Overall' : d.task,
        d.metric === 'score' ? ctx.r.score : d.metric,
        f2(d.a),
        f2(d.b),
        signed(d.delta.delta),
        ciText(d.delta.ci),
        pValue(d.delta.p),
      ]);
    }
  } else {
    for (const task of BOARD_TASKS[a.board]) {
      rows.push([task, ctx.r.score, f2(a.tasks[task]?.score), f2(b.tasks[task]?.score), '', '', '']);
    }
    rows.push(['Overall', ctx.r.score, f2(a.overall), f2(b.overall), '', '', '']);
  }
  return (
    <Layout ctx={ctx} title={`${a.model} – ${b.model}`}>
      <h1>{ctx.t.comparison}</h1>
      <p>
        A: <a href={href(ctx, `/submissions/${a.id}`)}>{a.model}</a> · B:{' '}
        <a href={href(ctx, `/submissions/${b.id}`)}>{b.model}</a>
      </p>
      <p class="note">
        {comparison ? ctx.r.comparisonNote(comparison.method.resamples) : ctx.t.closedComparison}
      </p>
      {comparison?.errors.map((err) => (
        <p class="note warn">{err.message}</p>
      ))}
      <div class="table-wrap">
        <table class="sortable">
          <thead>
            <tr>
              {[ctx.r.task, ctx.r.metric, 'A', 'B', 'B − A', '95% CI', 'p'].map((h, i) => (
                <th scope="col" class={i > 1 ? 'num' : undefined}>
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <th scope="row">{r[0]}</th>
                <td>{r[1]}</td>
                {r.slice(2).map((c) => (
                  <td class="num">{c}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Charts charts={charts} />
    </Layout>
  );
};

/** The upload form; after a rejected upload it keeps what was typed (files cannot be kept by a browser). */
export const UploadForm: FC<{ ctx: PageContext; maxMb: number; values?: Record<string, string> }> = ({
  ctx,
  maxMb,
  values = {},
}) => (
  <form
    method="post"
    action={`${href(ctx, '/submit')}&_csrf=${encodeURIComponent(ctx.csrf)}`}
    enctype="multipart/form-data"
    class="upload"
    data-max-bytes={String(maxMb * 1024 * 1024)}
  >
    <CsrfField ctx={ctx} />
    <label>
      {ctx.t.files}
      <input type="file" name="file" accept=".zip,.jsonl" multiple required />
    </label>
    <p class="note">
      {ctx.t.maxSize(maxMb)} <span class="size-warning warn" hidden data-text={ctx.t.tooLarge(maxMb)}></span>
    </p>
    <SubmissionFields
      ctx={ctx}
      upload
      values={{
        ...values,
        ...(values.open_weights !== undefined ? { openWeights: values.open_weights === 'yes' } : {}),
      }}
    />
    <label>
      {ctx.t.board}
      <select name="board">
        <option value="auto">{ctx.t.boardAuto}</option>
        <option value="public" selected={values.board === 'public'}>
          {ctx.t.publicBoard}
        </option>
        <option value="closed" selected={values.board === 'closed'}>
          {ctx.t.closedBoard}
        </option>
      </select>
    </label>
    <button type="submit">{ctx.t.send}</button>
  </form>
);

export const UploadPage: FC<{
  ctx: PageContext;
  maxMb: number;
  answer?: UploadAnswer;
  error?: string;
  values?: Record<string, string>;
}> = ({ ctx, maxMb, answer, error, values }) => (
  <Layout ctx={ctx} title={ctx.t.upload}>
    <h1>{ctx.t.upload}</h1>
    {error ? (
      <div class="alert" role="alert">
        {error}
      </div>
    ) : (
      ''
    )}
    {answer && answer.status === 'rejected' ? (
      <div class="alert" role="alert" id="upload-errors">
        <h2>{ctx.t.rejected}</h2>
        <p>{ctx.t.rejectedNote}</p>
        <IssueList issues={answer.errors} />
        {answer.warnings.length > 0 ? <IssueList issues={answer.warnings} /> : ''}
        {Object.keys(answer.omitted ?? {}).length > 0 ? (
          <ul class="issues" id="upload-omitted">
            {Object.entries(answer.omitted).map(([code, n]) => (
              <li>{ctx.t.omitted(n, code)}</li>
            ))}
          </ul>
        ) : (
          ''
        )}
      </div>
    ) : (
      ''
    )}
    {answer && answer.status === 'pending' ? (
      <div class="notice" role="status">
        <h2>{ctx.t.pending}</h2>
        <p>{ctx.t.pendingNote}</p>
        <IssueList issues={answer.warnings} />
      </div>
    ) : (
      ''
    )}
    <p class="note">{ctx.t.uploadNote}</p>
    <UploadForm ctx={ctx} maxMb={maxMb} {...(values ? { values } : {})} />
  </Layout>
);

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
