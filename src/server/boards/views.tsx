/** The boards' page: the paper's rows and the entries, ranked, with their intervals. */
import { raw } from 'hono/html';
import type { FC } from 'hono/jsx';
import { escapeToBuffer } from 'hono/utils/html';
import { formatUsd } from '../../llm/cost.js';
import type { PaperRow } from '../../report/paper.js';
import type { RunUsage } from '../../scoring/run-usage.js';
import { getTask, shippedFile } from '../../tasks/registry.js';
import type { MetricName } from '../../tasks/types.js';
import type { ChartBlock } from '../charts.js';
import { BOARD_TASKS, HELD_TASKS, SIX_TASK_OVERALL } from '../score-upload.js';
import { ciText, count, Figure, f2, href, Layout, type PageContext } from '../views/layout.js';
import type { BoardName, Entry } from './entries.js';
import {
  type BoardView,
  DEFAULT_VIEW,
  defaultDir,
  MAX_SEARCH,
  PAGE_SIZE,
  type SortKey,
  sortKeys,
} from './paging.js';
import type { RankCell } from './ranking.js';
import type { RankingState } from './service.js';

/**
 * "rank 2–5 · ab" under a score (the page's note says what the numbers are). Written as one string: a board of
 * hundreds has six per row, and a component each would make the page a third slower to draw.
 */
const escapeHtml = (text: string): string => {
  const out: [string] = [''];
  escapeToBuffer(text, out);
  return out[0];
};

// An entry below the best TESTED_TOP of a task has no letters (../../metrics/ranking.ts): its interval alone. An
// interval over all `of` ranked entries places the entry nowhere, and says so in words: on a board of 1,880 copies,
// "rank 1–1880 · a" read as a best. Ranks are counts, written the one way the page writes thousands.
const place = (p: RankCell | undefined, ctx: PageContext, of: number, words = false) => {
  if (!p) return '';
  const [lo, hi] = p.rank_ci;
  const group = p.group ? ` · <b>${escapeHtml(p.group)}</b>` : '';
  if (of > 2 && lo === 1 && hi >= of)
    return raw(
      `<small class="place any" title="${escapeHtml(ctx.t.anyPlaceTitle)}">${escapeHtml(ctx.t.anyPlace(count(of, ctx.lang)))}${group}</small>`,
    );
  const interval = lo === hi ? count(lo, ctx.lang) : `${count(lo, ctx.lang)}–${count(hi, ctx.lang)}`;
  return raw(
    `<small class="place">${words ? `${escapeHtml(ctx.t.rankWord)} ` : ''}${escapeHtml(interval)}${group}</small>`,
  );
};

/**
 * Words that stay on one line (non-breaking spaces): a two-metric cell's "score 61.25 [58.45, 63.99]" breaks only
 * between the score and its interval, and only where a wide board needs the room.
 */
const whole = (text: string) => text.replaceAll(' ', '\u00a0');

const metricCell = (metrics: Partial<Record<string, number>> | undefined, task: string) =>
  metrics
    ? getTask(task)
        .metrics.map((m: MetricName) => f2(metrics[m]))
        .join('/')
    : '–';

/** The probes of an entry's uploaded run that found contamination: `<task> <probe> p=…`. */
export const contaminated = (e: Entry): string[] =>
  Object.entries(e.trust?.contamination ?? {}).flatMap(([task, probes]) =>
    Object.entries(probes)
      .filter(([, p]) => p?.verdict === 'contaminated')
      .map(([probe, p]) => `${task} ${probe} p=${(p?.p_value ?? Number.NaN).toPrecision(2)}`),
  );

export const Tags: FC<{ e: Entry; ctx: PageContext }> = ({ e, ctx }) => (
  <span class="tags">
    <span class="tag kind">{ctx.t.kinds[e.kind] ?? e.kind}</span>
    {e.params ? <span class="tag">{e.params}</span> : ''}
    {e.open_weights ? <span class="tag">{ctx.t.openTag}</span> : ''}
    {e.verified ? <span class="tag ok">{ctx.t.verified}</span> : ''}
    {e.platform_run ? <span class="tag ok platform">{ctx.t.platformRun}</span> : ''}
    {contaminated(e).length > 0 ? (
      <span class="tag warn contamination" title={contaminated(e).join('; ')}>
        {ctx.t.contaminationFound}
      </span>
    ) : (
      ''
    )}
    {e.flagged ? <span class="tag warn">{ctx.t.flagged}</span> : ''}
    {e.hidden ? <span class="tag warn">{ctx.t.hiddenTag}</span> : ''}
    {e.coverage ? (
      <span class="tag" title={ctx.t.coverageTitle}>
        {ctx.t.coverageTag(e.coverage.answered, e.coverage.sampled)}
      </span>
    ) : (
      ''
    )}
  </span>
);

/** Tokens in words: prompt, completion, of them reasoning, cached prompt. */
export function usageWords(u: RunUsage, ctx: PageContext): string {
  const n = (x: number) => count(x, ctx.lang);
  return [
    `${n(u.prompt_tokens)} ${ctx.t.promptTokens}`,
    `${n(u.completion_tokens)} ${ctx.t.completionTokens}`,
    ...(u.reasoning_tokens !== undefined ? [`${n(u.reasoning_tokens)} ${ctx.t.reasoningTokens}`] : []),
    ...(u.cached_prompt_tokens !== undefined ? [`${n(u.cached_prompt_tokens)} ${ctx.t.cachedTokens}`] : []),
    ...(u.requests !== undefined ? [`${n(u.requests)} ${ctx.t.requestsWord}`] : []),
  ].join(', ');
}

/** The cost column's cell: USD where the run was priced, the tokens under it, the details in its title. */
const UsageCell: FC<{ u: RunUsage | null; ctx: PageContext }> = ({ u, ctx }) =>
  u ? (
    <td class="num usage" title={usageWords(u, ctx)}>
      {u.cost_usd !== undefined ? formatUsd(u.cost_usd) : <span class="note">{ctx.t.notPriced}</span>}
      {u.batch ? <span class="tag">{ctx.t.batchTag}</span> : ''}
      <small class="ci">{`${count(u.prompt_tokens + u.completion_tokens, ctx.lang)} ${ctx.t.tokensWord}`}</small>
    </td>
  ) : (
    <td class="num usage">–</td>
  );

export const BoardPage: FC<{
  ctx: PageContext;
  board: BoardName;
  /** The whole board, in its order (whether it is empty, the cost column, the Ladder's note). */
  all: Entry[];
  /** The entries this page shows, in the view's order. */
  entries: Entry[];
  /** An entry's place in the board's order (none: not ranked, no overall). */
  rankOf: (e: Entry) => number | undefined;
  /** The view (search, sort, page) and how many entries it found. */
  paging: Paging;
  /** The paper's rows that stand among this page's entries. */
  paperRows: readonly PaperRow[];
  /** Closed scores are released by the Ladder (the board says so, entries or not). */
  ladder?: boolean;
  ranking: RankingState;
  /** Cost against overall score, where two or more entries were priced. */
  costChart?: ChartBlock | null;
}> = ({ ctx, board, all, entries, rankOf, paging, paperRows, ladder, ranking, costChart }) => {
  const tasks = BOARD_TASKS[board];
  // The cost column appears once some entry's upload said what its run spent.
  const spent = all.some((e) => e.usage !== null);
  // Tasks defined in files: MedBench's own (ECG2Pathology, shipped with the package) or this board's host's.
  const fromFiles = tasks.filter((t) => getTask(t).source !== undefined);
  const medbench = fromFiles.filter((t) => shippedFile(t) !== undefined);
  const defined = fromFiles.filter((t) => shippedFile(t) === undefined);
  // The public board's tasks on hidden gold (ECG2Pathology), and MedBench's six-task overall once it has all six.
  const held = board === 'public' ? HELD_TASKS.public : [];
  const six = board === 'public' && SIX_TASK_OVERALL.every((t) => tasks.includes(t));
  const title = board === 'public' ? ctx.t.publicBoard : ctx.t.closedBoard;
  // The paper's rows stand among the entries where their overall puts them; entries are numbered, they are not.
  type Row =
    | { kind: 'paper'; p: PaperRow; at: number }
    | { kind: 'entry'; e: Entry; rank?: number; at: number };
  const ranked: Row[] = entries.map((e) => {
    const rank = rankOf(e);
    return { kind: 'entry', e, at: e.overall ?? -1, ...(rank !== undefined ? { rank } : {}) };
  });
  // Until the ranking is computed for the board as it stands, the numbers are the order of the overall scores, and the
  // ranks and groups under the scores (if any) are from before: shown, in grey, as provisional.
  const provisional =
    all.length > 0 && (ranking.error !== null || ranking.ranking === null || !ranking.current);
  const ranksShown = all.some(
    (e) => e.place !== undefined || Object.values(e.tasks).some((c) => c?.place !== undefined),
  );
  // How many entries each rank interval is among (the overall's, and each task's).
  const placedOverall = all.filter((e) => e.place !== undefined).length;
  const placed = Object.fromEntries(
    tasks.map((t) => [t, all.filter((e) => e.tasks[t]?.place !== undefined).length]),
  );
  // The column the board is sorted by says so (aria-sort); the others say nothing.
  const sortedBy = (key: SortKey) =>
    paging.view.sort === key ? { 'aria-sort': paging.view.dir === 'asc' ? 'ascending' : 'descending' } : {};
  const rows: Row[] =
    paperRows.length === 0
      ? ranked
      : [...paperRows.map((p): Row => ({ kind: 'paper', p, at: p.overall })), ...ranked].sort(
          (a, b) => b.at - a.at,
        );
  return (
    <Layout ctx={ctx} title={title}>
      <h1>{title}</h1>
      <p class="note">{board === 'public' ? ctx.t.publicNote : ctx.t.closedNote}</p>
      {board === 'closed' && (ladder || all.some((e) => e.ladder)) ? (
        <p class="note ladder">{ctx.t.ladderNote}</p>
      ) : (
        ''
      )}
      <p class="note">
        {tasks.some((t) => getTask(t).metrics.length > 1) ? ctx.t.ciHintPaired : ctx.t.ciHint}{' '}
        <a href={`/board/${board}.csv`}>{ctx.t.exportCsv}</a> ·{' '}
        <a href={`/api/boards/${board}`}>{ctx.t.exportJson}</a>
      </p>
      {/* Under the Ladder, uploads have no rank interval or group: the hint explains them only where some are shown. */}
      {board === 'closed' && ladder && !ranksShown ? '' : <p class="note rank-hint">{ctx.t.rankHint}</p>}
      {medbench.length > 0 ? (
        <p class="note defined-tasks">{ctx.t.medbenchTasks(medbench.join(', '), six)}</p>
      ) : (
        ''
      )}
      {defined.length > 0 ? <p class="note defined-tasks">{ctx.t.definedTasks(defined.join(', '))}</p> : ''}
      {held.length > 0 ? <p class="note ladder held-tasks">{ctx.t.heldNote(held.join(', '))}</p> : ''}
      {board === 'closed' && ladder ? <p class="note">{ctx.t.ladderRanks}</p> : ''}
      {all.length === 0 ? (
        ''
      ) : ranking.error ? (
        <p class="note ranking-status warn" id="ranking-status">
          {ctx.t.rankingFailed}
        </p>
      ) : ranking.ranking === null ? (
        <p class="note ranking-status" id="ranking-status">
          {ctx.t.rankingComputing}
        </p>
      ) : !ranking.current ? (
        <p class="note ranking-status" id="ranking-status">
          {ctx.t.rankingUpdating}
        </p>
      ) : (
        ''
      )}
      {all.length > 0 ? (
        <BoardFind
          ctx={ctx}
          board={board}
          paging={paging}
          ladderOrder={board === 'closed' && !!ladder && !ranksShown}
        />
      ) : (
        ''
      )}
      {/*
       * On a phone the tasks' columns are hidden until asked for (pages.css): one switch, no script. Its words say
       * whether it is on; once on, the model's column stays at the left while the tasks scroll.
       */}
      <input type="checkbox" id="show-tasks" class="show-tasks" />
      <label for="show-tasks" class="show-tasks">
        <span class="off">{ctx.t.tasksShow}</span>
        <span class="on">{ctx.t.tasksShown}</span>
      </label>
      <div class="table-wrap">
        <table
          class={`board${provisional ? ' provisional' : ''}`}
          id="board"
          aria-describedby={provisional ? 'ranking-status' : undefined}
        >
          <thead>
            <tr>
              <th scope="col" class="num" {...sortedBy('rank')}>
                <SortLink ctx={ctx} board={board} view={paging.view} by="rank">
                  {ctx.t.rank}
                </SortLink>
              </th>
              <th scope="col" {...sortedBy('model')}>
                <SortLink ctx={ctx} board={board} view={paging.view} by="model">
                  {ctx.t.model}
                </SortLink>
              </th>
              <th scope="col" class="team" {...sortedBy('team')}>
                <SortLink ctx={ctx} board={board} view={paging.view} by="team">
                  {ctx.t.team}
                </SortLink>
              </th>
              {tasks.map((t) => {
                const mde = ranking.ranking?.tasks[t]?.mde;
                return (
                  <th scope="col" class="num task" {...sortedBy(`task:${t}`)}>
                    <SortLink ctx={ctx} board={board} view={paging.view} by={`task:${t}`}>
                      <span class="name">{t}</span>
                    </SortLink>
                    {mde != null ? (
                      <small class="mde" title={ctx.t.detectableTitle}>
                        {ctx.t.detectable(mde.toFixed(1))}
                      </small>
                    ) : (
                      ''
                    )}
                  </th>
                );
              })}
              <th scope="col" class="num" {...sortedBy('overall')}>
                <SortLink ctx={ctx} board={board} view={paging.view} by="overall">
                  {ctx.t.overall}
                </SortLink>
              </th>
              {six ? (
                <th
                  scope="col"
                  class="num overall-six"
                  title={ctx.t.overallSixTitle}
                  {...sortedBy('overall_six')}
                >
                  <SortLink ctx={ctx} board={board} view={paging.view} by="overall_six">
                    {ctx.t.overallSix}
                  </SortLink>
                </th>
              ) : (
                ''
              )}
              {spent ? (
                <th scope="col" class="num usage" title={ctx.t.costColumnTitle} {...sortedBy('cost')}>
                  <SortLink ctx={ctx} board={board} view={paging.view} by="cost">
                    {ctx.t.costColumn}
                  </SortLink>
                </th>
              ) : (
                ''
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) =>
              row.kind === 'paper' ? (
                <tr class="reference">
                  <td class="num"></td>
                  <th scope="row">
                    {ctx.r.paperRowName(row.p.model)} <span class="tag">{ctx.t.reference}</span>
                  </th>
                  <td class="team">Blinov et al., 2022</td>
                  {tasks.map((t) => (
                    <td class="num task">{metricCell(row.p.tasks[t], t)}</td>
                  ))}
                  <td class="num">{f2(row.p.overall)}</td>
                  {six ? (
                    <td class="num overall-six">
                      {row.p.overallSix !== undefined ? f2(row.p.overallSix) : '–'}
                    </td>
                  ) : (
                    ''
                  )}
                  {spent ? <td class="num usage"></td> : ''}
                </tr>
              ) : (
                <tr class="entry" data-id={row.e.id}>
                  <td class="num rank" title={provisional && row.rank ? ctx.t.provisionalRank : undefined}>
                    {row.rank ?? ''}
                  </td>
                  <th scope="row">
                    <a href={href(ctx, `/submissions/${row.e.id}`)}>{row.e.model}</a>{' '}
                    <Tags e={row.e} ctx={ctx} />
                  </th>
                  <td class="team">
                    {row.e.team ? shownTeam(ctx, row.e) : <span class="note">{ctx.t.anonymous}</span>}
                  </td>
                  {tasks.map((t) => {
                    const c = row.e.tasks[t];
                    // Under a two-metric task's pair ("47.45/70.44"), the interval is its task score's: named so.
                    const paired = !c?.released && getTask(t).metrics.length > 1;
                    return (
                      <td
                        class="num task"
                        title={
                          c?.score_ci ? `${ctx.r.score} ${f2(c.score)} ${ciText(c.score_ci)}` : undefined
                        }
                      >
                        {c?.released ? (
                          <>
                            {f2(c.score)} <span class="tag">{ctx.t.releasedTag}</span>
                          </>
                        ) : (
                          metricCell(c?.metrics, t)
                        )}
                        {c?.score_ci ? (
                          <small class="ci">
                            {paired
                              ? `${whole(`${ctx.t.scoreWord} ${f2(c.score)}`)} ${whole(ciText(c.score_ci))}`
                              : whole(ciText(c.score_ci))}
                          </small>
                        ) : (
                          ''
                        )}
                        {place(c?.place, ctx, placed[t] ?? 0)}
                        {row.e.trust?.formulations?.[t] ? (
                          <small class="ci" title={ctx.t.formulationsHint}>
                            {`${row.e.trust.formulations[t].variants} ${ctx.t.wordings}: ${f2(row.e.trust.formulations[t].mean)} ± ${f2(row.e.trust.formulations[t].sd)}`}
                          </small>
                        ) : (
                          ''
                        )}
                      </td>
                    );
                  })}
                  <td class="num">
                    <strong>{f2(row.e.overall)}</strong>
                    {row.e.overall_ci ? <small class="ci">{ciText(row.e.overall_ci)}</small> : ''}
                    {place(row.e.place, ctx, placedOverall, true)}
                  </td>
                  {six ? <td class="num overall-six">{f2(row.e.overall_six)}</td> : ''}
                  {spent ? <UsageCell u={row.e.usage} ctx={ctx} /> : ''}
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
      {all.length === 0 ? (
        <p class="note">{ctx.t.empty}</p>
      ) : paging.found === 0 ? (
        <p class="note">{ctx.t.nothingFound}</p>
      ) : (
        ''
      )}
      <BoardPages ctx={ctx} board={board} paging={paging} />
      {costChart ? (
        <section class="cost">
          <h2>{ctx.r.costChart}</h2>
          <p class="note">{ctx.t.costChartNote}</p>
          <Figure chart={costChart} />
        </section>
      ) : (
        ''
      )}
    </Layout>
  );
};

/** Which entries a board page shows: the view asked for (its page clamped to the last), and what it found. */
export interface Paging {
  view: BoardView;
  pages: number;
  /** The index of the page's first entry among those found. */
  start: number;
  found: number;
}

/** A board page's address for a view: only what differs from the default view, and the page's language. */
export function viewHref(ctx: PageContext, board: BoardName, view: BoardView): string {
  const params = new URLSearchParams();
  if (view.q) params.set('q', view.q);
  if (view.sort !== DEFAULT_VIEW.sort) params.set('sort', view.sort);
  if (view.dir !== defaultDir(view.sort)) params.set('dir', view.dir);
  if (view.page !== 1) params.set('page', String(view.page));
  const query = params.toString();
  return href(ctx, `${board === 'public' ? '/' : `/board/${board}`}${query ? `?${query}` : ''}`);
}

/**
 * A column's header: a link to the board sorted by it, on the server, over every entry (not the page shown): the
 * column's own best-first direction, or the other one when the board is already sorted by it. The address carries
 * the sort, so the form below shows it and the page can be shared.
 */
const SortLink: FC<{
  ctx: PageContext;
  board: BoardName;
  view: BoardView;
  by: SortKey;
  children?: unknown;
}> = ({ ctx, board, view, by, children }) => {
  const dir = view.sort === by ? (view.dir === 'asc' ? 'desc' : 'asc') : defaultDir(by);
  return (
    <a class="sort" href={viewHref(ctx, board, { ...view, sort: by, dir, page: 1 })}>
      {children as never}
    </a>
  );
};

/**
 * The search by model and team, and the sort by any column: a form sent with GET, answered by the server. Under the
 * Ladder (`ladderOrder`) no upload has a rank: the first sort is the board's order by released scores, named so.
 */
const BoardFind: FC<{ ctx: PageContext; board: BoardName; paging: Paging; ladderOrder: boolean }> = ({
  ctx,
  board,
  paging,
  ladderOrder,
}) => {
  const { view } = paging;
  const label = (k: SortKey): string =>
    k === 'rank'
      ? ladderOrder
        ? ctx.t.sortLadderOrder
        : ctx.t.sortRank
      : k === 'model'
        ? ctx.t.model
        : k === 'team'
          ? ctx.t.team
          : k === 'overall'
            ? ctx.t.overall
            : k === 'overall_six'
              ? ctx.t.overallSix
              : k === 'cost'
                ? ctx.t.costColumn
                : k === 'submitted'
                  ? ctx.t.sortSubmitted
                  : k.slice('task:'.length);
  return (
    <form class="board-find" method="get" action={board === 'public' ? '/' : `/board/${board}`}>
      <input type="hidden" name="lang" value={ctx.lang} />
      <label>
        {ctx.t.searchLabel}{' '}
        <input type="search" name="q" value={view.q} maxlength={MAX_SEARCH} placeholder={ctx.t.searchHint} />
      </label>{' '}
      <label>
        {ctx.t.sortLabel}{' '}
        <select name="sort">
          {sortKeys(board).map((k) => (
            <option value={k} selected={k === view.sort}>
              {label(k)}
            </option>
          ))}
        </select>
      </label>{' '}
      <select name="dir" aria-label={ctx.t.sortLabel}>
        <option value="asc" selected={view.dir === 'asc'}>
          {ctx.t.sortAsc}
        </option>
        <option value="desc" selected={view.dir === 'desc'}>
          {ctx.t.sortDesc}
        </option>
      </select>{' '}
      <button type="submit">{ctx.t.searchGo}</button>
    </form>
  );
};

/** "Entries 101–200 of 5,000 · page 2 of 50", and links to the previous and the next pages. */
const BoardPages: FC<{ ctx: PageContext; board: BoardName; paging: Paging }> = ({ ctx, board, paging }) => {
  const { view, pages, start, found } = paging;
  if (found === 0) return '';
  const to = (page: number) => viewHref(ctx, board, { ...view, page });
  const n = (x: number) => count(x, ctx.lang);
  return (
    <nav class="board-pages" aria-label={ctx.t.pagesLabel}>
      {view.page > 1 ? (
        <>
          <a href={to(1)} rel="first">
            {ctx.t.firstPage}
          </a>{' '}
          <a href={to(view.page - 1)} rel="prev">
            {ctx.t.previousPage}
          </a>{' '}
        </>
      ) : (
        ''
      )}
      <span class="note">
        {ctx.t.pageOf(n(start + 1), n(Math.min(start + PAGE_SIZE, found)), n(found), n(view.page), n(pages))}
      </span>
      {view.page < pages ? (
        <>
          {' '}
          <a href={to(view.page + 1)} rel="next">
            {ctx.t.nextPage}
          </a>{' '}
          <a href={to(pages)} rel="last">
            {ctx.t.lastPage}
          </a>
        </>
      ) : (
        ''
      )}
    </nav>
  );
};

/**
 * The team as the page's language says it: an entry the platform ran for no registered owner is stored with the team
 * "platform", shown in words of the page.
 */
export function shownTeam(ctx: PageContext, e: Pick<Entry, 'team' | 'platform_run'>): string {
  if (!e.team) return ctx.t.anonymous;
  return e.platform_run && e.team === 'platform' ? ctx.t.platformTeam : e.team;
}

/** The description of a platform-run entry, stored in English ("Run by the platform (name)."), in the page's words. */
export function shownDescription(ctx: PageContext, e: Pick<Entry, 'description' | 'platform_run'>): string {
  const m = e.platform_run ? /^Run by the platform \((.*)\)\.$/.exec(e.description ?? '') : null;
  return m ? ctx.t.platformDescription(m[1] as string) : (e.description ?? '');
}
