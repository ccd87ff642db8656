/** A submission's page, the comparison of two, the upload form and its answer. */
import type { FC } from 'hono/jsx';
import { formatUsd } from '../../llm/cost.js';
import { deltaRows } from '../../report/build.js';
import { pValue, signed } from '../../report/format.js';
import type { ComparisonResult } from '../../scoring/compare.js';
import { getTask } from '../../tasks/registry.js';
import type { Entry } from '../boards/entries.js';
import { shownDescription, shownTeam, Tags, usageWords } from '../boards/views.js';
import type { ChartBlock } from '../charts.js';
import type { UploadAnswer } from '../leaderboard.js';
import { BOARD_TASKS, HELD_TASKS } from '../score-upload.js';
import {
  CsrfField,
  ciText,
  count,
  Figure,
  f2,
  href,
  IssueList,
  Layout,
  type PageContext,
  When,
} from '../views/layout.js';
import { FIELD_LIMITS, KINDS, UPLOAD_KINDS } from './metadata.js';

const MetaTable: FC<{ ctx: PageContext; e: Entry }> = ({ ctx, e }) => (
  <table class="meta">
    <tbody>
      <tr>
        <th scope="row">{ctx.t.team}</th>
        <td>{shownTeam(ctx, e)}</td>
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
        <td>
          <When ctx={ctx} iso={e.created_at} />
        </td>
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
      {e.platform_run ? (
        <>
          <tr>
            <th scope="row">{ctx.t.platformRunHeading}</th>
            <td>
              {ctx.t.platformRunNote}{' '}
              <a href={href(ctx, `/runs/${e.platform_run.plan_id}`)}>{e.platform_run.plan_id}</a>
            </td>
          </tr>
          <tr>
            <th scope="row">{ctx.t.runSettings}</th>
            <td>
              <code>
                {Object.entries(e.platform_run.settings)
                  .map(([k, v]) => `${k}=${String(v)}`)
                  .join(' · ')}
              </code>
            </td>
          </tr>
          <tr>
            <th scope="row">{ctx.t.promptVersions}</th>
            <td>
              <code>
                {Object.entries(e.platform_run.prompt_versions)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(' · ')}
              </code>
            </td>
          </tr>
          <tr>
            <th scope="row">{ctx.t.manifest}</th>
            <td>
              <details>
                <summary>manifest.json</summary>
                <pre>{JSON.stringify(e.platform_run.manifest, null, 2)}</pre>
              </details>
            </td>
          </tr>
        </>
      ) : (
        ''
      )}
      {e.trust?.contamination ? (
        <tr>
          <th scope="row">{ctx.t.contaminationHeading}</th>
          <td>
            {Object.entries(e.trust.contamination).flatMap(([task, probes]) =>
              Object.entries(probes).map(([probe, p]) => (
                <div>
                  {`${task} · ${ctx.r.probeNames[probe] ?? probe}`}
                  {ctx.r.probeNames[probe] !== probe ? (
                    <>
                      {' '}
                      <code>{probe}</code>
                    </>
                  ) : (
                    ''
                  )}
                  {`: n ${count(p?.n ?? 0, ctx.lang)}, p ${(p?.p_value ?? Number.NaN).toPrecision(2)} (α ${p?.alpha}) — ${ctx.r.verdicts[p?.verdict ?? ''] ?? p?.verdict}`}
                </div>
              )),
            )}
          </td>
        </tr>
      ) : (
        ''
      )}
      {e.trust?.formulations ? (
        <tr>
          <th scope="row">{ctx.t.formulationsHeading}</th>
          <td>
            {Object.entries(e.trust.formulations).map(([task, f]) => (
              <div>{`${task}: ${f.variants} ${ctx.t.wordings}, ${f2(f.mean)} ± ${f2(f.sd)} (${f2(f.min)}–${f2(f.max)})`}</div>
            ))}
          </td>
        </tr>
      ) : (
        ''
      )}
      {e.usage ? (
        <tr class="usage">
          <th scope="row">{ctx.t.usageHeading}</th>
          <td>
            {e.usage.cost_usd !== undefined ? (
              <strong>{formatUsd(e.usage.cost_usd)}</strong>
            ) : (
              ctx.t.notPriced
            )}
            {e.usage.batch ? ` (${ctx.t.batchNote})` : ''}
            <div>{usageWords(e.usage, ctx)}</div>
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

const Charts: FC<{ charts: ChartBlock[] }> = ({ charts }) => (
  <>
    {charts.map((c) => (
      <Figure chart={c} />
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
    // A score on hidden gold as the Ladder released it: no metric of its own, no interval.
    if (c.released) {
      rows.push([task, String(c.n), `${ctx.r.score} (${ctx.t.releasedTag})`, f2(c.score), '–']);
      continue;
    }
    for (const m of getTask(task).metrics)
      rows.push([task, String(c.n), ctx.r.metricName(m), f2(c.metrics[m]), ciText(c.ci[m]) || '–']);
    if (getTask(task).metrics.length > 1)
      rows.push([task, String(c.n), ctx.r.score, f2(c.score), ciText(c.score_ci) || '–']);
  }
  rows.push([ctx.t.overall, '', ctx.r.score, f2(e.overall), ciText(e.overall_ci) || '–']);
  if (e.overall_six !== null) rows.push([ctx.t.overallSix, '', ctx.r.score, f2(e.overall_six), '–']);
  const onHiddenGold = HELD_TASKS.public;
  const held = Object.keys(e.tasks).filter((t) => onHiddenGold.includes(t));
  return (
    <Layout ctx={ctx} title={e.model}>
      <h1>{e.model}</h1>
      {/* The scores first: a phone's first screen shows them; the notes, the description and the metadata follow. */}
      <h2>{ctx.t.metrics}</h2>
      <div class="table-wrap">
        <table class="sortable metrics">
          <thead>
            <tr>
              <th scope="col">{ctx.r.task}</th>
              <th scope="col" class="num n">
                n
              </th>
              <th scope="col">{ctx.r.metric}</th>
              <th scope="col" class="num">
                {ctx.r.value}
              </th>
              <th scope="col" class="num ci">
                {ctx.r.ci95}
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <th scope="row">{r[0]}</th>
                <td class="num n">{r[1]}</td>
                <td>{r[2]}</td>
                <td class="num">
                  {r[3]}
                  {/* On a phone the interval stands under its value, and its own column gives way. */}
                  <small class="ci under">{r[4]}</small>
                </td>
                <td class="num ci">{r[4]}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {e.ladder && e.board === 'closed' ? <p class="note ladder">{ctx.t.ladderNote}</p> : ''}
      {e.board === 'public' && held.length > 0 ? (
        <p class="note ladder">{ctx.t.heldNote(held.join(', '))}</p>
      ) : (
        ''
      )}
      {e.description ? <p class="description">{shownDescription(ctx, e)}</p> : ''}
      <MetaTable ctx={ctx} e={e} />
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
        d.task === 'RuMedOverall' ? ctx.t.overall : d.task,
        d.metric === 'score' ? ctx.r.score : ctx.r.metricName(d.metric),
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
    rows.push([ctx.t.overall, ctx.r.score, f2(a.overall), f2(b.overall), '', '', '']);
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
        {/*
         * On a phone the table stands whole in four columns: the metric under its task, the interval and p under the
         * difference (the `under` copies), their own columns giving way (pages.css).
         */}
        <table class="sortable compare">
          <thead>
            <tr>
              <th scope="col">{ctx.r.task}</th>
              <th scope="col" class="metric">
                {ctx.r.metric}
              </th>
              <th scope="col" class="num">
                A
              </th>
              <th scope="col" class="num">
                B
              </th>
              <th scope="col" class="num delta">
                B − A
                {comparison ? (
                  <>
                    <small class="under">{ctx.r.ci95}</small>
                    <small class="under">p</small>
                  </>
                ) : (
                  ''
                )}
              </th>
              <th scope="col" class="num ci">
                {ctx.r.ci95}
              </th>
              <th scope="col" class="num p">
                p
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <th scope="row">
                  {r[0]}
                  <small class="under">{r[1]}</small>
                </th>
                <td class="metric">{r[1]}</td>
                <td class="num">{r[2]}</td>
                <td class="num">{r[3]}</td>
                <td class="num delta">
                  {r[4]}
                  {r[5] ? (
                    <>
                      <small class="under">{r[5]}</small>
                      <small class="under">p&nbsp;{r[6]}</small>
                    </>
                  ) : (
                    ''
                  )}
                </td>
                <td class="num ci">{r[5]}</td>
                <td class="num p">{r[6]}</td>
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
const UploadForm: FC<{ ctx: PageContext; maxMb: number; values?: Record<string, string> }> = ({
  ctx,
  maxMb,
  values = {},
}) => (
  <form
    method="post"
    action={href(ctx, '/submit')}
    enctype="multipart/form-data"
    class="upload"
    data-max-bytes={String(maxMb * 1024 * 1024)}
  >
    {/* First: the server checks the token at the body's first part, before it reads a file. */}
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
        <IssueList issues={answer.errors} lang={ctx.lang} />
        {answer.warnings.length > 0 ? <IssueList issues={answer.warnings} lang={ctx.lang} /> : ''}
        {Object.keys(answer.omitted ?? {}).length > 0 ? (
          <ul class="issues" id="upload-omitted">
            {Object.entries(answer.omitted).map(([code, n]) => (
              <li>
                {ctx.t.omitted(n)} <code>{code}</code>
              </li>
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
        <IssueList issues={answer.warnings} lang={ctx.lang} />
      </div>
    ) : (
      ''
    )}
    <p class="note">{ctx.t.uploadNote}</p>
    <UploadForm ctx={ctx} maxMb={maxMb} {...(values ? { values } : {})} />
  </Layout>
);

/** What a submission's fields show: the values given (an upload sent back with its errors, or a stored row). */
interface SubmissionFieldValues {
  model?: string;
  team?: string;
  kind?: string;
  params?: string;
  link?: string;
  description?: string;
  openWeights?: boolean;
}

/**
 * The submission's description fields, shared by the upload form and the admin's edit form. An upload names no team
 * (a team comes from its API token) and cannot be a human row (those come from campaigns).
 */
export const SubmissionFields: FC<{ ctx: PageContext; values: SubmissionFieldValues; upload?: boolean }> = ({
  ctx,
  values,
  upload = false,
}) => (
  <>
    <label>
      {ctx.t.model} *
      <input name="model" required maxlength={FIELD_LIMITS.model} value={values.model} />
    </label>
    {upload ? (
      ''
    ) : (
      <label>
        {ctx.t.team}
        <input name="team" maxlength={FIELD_LIMITS.team} value={values.team} />
      </label>
    )}
    <label>
      {ctx.t.kind} *
      <select name="kind" required>
        {(upload ? UPLOAD_KINDS : KINDS).map((k) => (
          <option value={k} selected={values.kind === k}>
            {ctx.t.kinds[k] ?? k}
          </option>
        ))}
      </select>
    </label>
    <label>
      {ctx.t.params}
      <input name="params" maxlength={FIELD_LIMITS.params} placeholder="7B" value={values.params} />
    </label>
    <label>
      {ctx.t.link}
      <input
        name="link"
        type="url"
        maxlength={FIELD_LIMITS.link}
        placeholder="https://"
        value={values.link}
      />
    </label>
    <label>
      {ctx.t.description}
      <textarea name="description" maxlength={FIELD_LIMITS.description} rows={3}>
        {values.description ?? ''}
      </textarea>
    </label>
    <label class="check">
      <input type="checkbox" name="open_weights" value="yes" checked={values.openWeights === true} />{' '}
      {ctx.t.openWeights}
    </label>
  </>
);
