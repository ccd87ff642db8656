/** The admin's pages: sign-in, every submission (rejected and hidden ones too) with its actions, tokens, the log. */
import type { FC } from 'hono/jsx';
import { SubmissionFields } from '../submissions/views.js';
import { CsrfField, f2, href, IssueList, Layout, type PageContext, When } from '../views/layout.js';
import type { AdminListedSubmission, AdminOverview, AdminSubmission } from './service.js';

export const LoginPage: FC<{ ctx: PageContext; failed?: boolean }> = ({ ctx, failed }) => (
  <Layout ctx={ctx} title={ctx.t.login}>
    <h1>{ctx.t.admin}</h1>
    {failed ? (
      <div class="alert" role="alert">
        {ctx.t.badLogin}
      </div>
    ) : (
      ''
    )}
    <form method="post" action={href(ctx, '/admin/login')} class="upload">
      <CsrfField ctx={ctx} />
      <label>
        {ctx.t.adminToken}
        <input type="password" name="token" required autocomplete="current-password" />
      </label>
      <button type="submit">{ctx.t.login}</button>
    </form>
  </Layout>
);

const ACTIONS: [string, (r: AdminListedSubmission) => boolean][] = [
  ['hide', (r) => r.hidden === 0],
  ['unhide', (r) => r.hidden === 1],
  ['flag', (r) => r.flagged === 0],
  ['unflag', (r) => r.flagged === 1],
  ['verify', (r) => r.verified === 0],
  ['unverify', (r) => r.verified === 1],
  ['delete', () => true],
];

/** An audit actor (`admin`, `platform`, `token:ID`, `address:IP`) in the page's language, its id as stored. */
function actorText(ctx: PageContext, actor: string) {
  const at = actor.indexOf(':');
  const kind = at < 0 ? actor : actor.slice(0, at);
  const word = ctx.t.adminWords.actors[kind];
  if (word === undefined) return <code>{actor}</code>;
  return at < 0 ? (
    word
  ) : (
    <>
      {word} <code>{actor.slice(at + 1)}</code>
    </>
  );
}

export const AdminPage: FC<
  {
    ctx: PageContext;
  } & AdminOverview
> = ({ ctx, rows, tokens, audit }) => (
  <Layout ctx={ctx} title={ctx.t.admin}>
    <h1>{ctx.t.admin}</h1>
    <p>
      <a href={href(ctx, '/admin/campaigns')}>{ctx.t.campaigns.heading}</a>{' '}
      <form method="post" action="/admin/logout" class="inline">
        <CsrfField ctx={ctx} />
        <button type="submit">{ctx.t.logout}</button>
      </form>
    </p>
    <div class="table-wrap">
      <table class="sortable admin">
        <thead>
          <tr>
            {[
              ctx.t.submitted,
              ctx.t.board,
              ctx.t.status,
              ctx.t.model,
              ctx.t.team,
              ctx.t.overall,
              ctx.t.sender,
              ctx.t.actions,
            ].map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr data-id={r.id}>
              <td>
                <When ctx={ctx} iso={r.created_at} />
              </td>
              <td>{ctx.t.adminWords.board[r.board] ?? r.board}</td>
              <td>
                {ctx.t.adminWords.status[r.status] ?? r.status}
                {r.hidden ? ` · ${ctx.t.adminWords.hidden}` : ''}
                {r.flagged ? ` · ${ctx.t.flagged}` : ''}
                {r.verified ? ` · ${ctx.t.verified}` : ''}
              </td>
              <th scope="row">
                <a href={href(ctx, `/admin/submissions/${r.id}`)}>{r.model}</a>
              </th>
              <td>{r.team}</td>
              <td class="num">{f2(r.overall === null ? null : Number(r.overall))}</td>
              <td>
                {r.token_id ? (
                  <>
                    {ctx.t.adminWords.token} <code>{r.token_id.slice(0, 8)}</code>
                  </>
                ) : (
                  <code>{r.address}</code>
                )}
              </td>
              <td class="actions">
                {ACTIONS.filter(([, when]) => when(r)).map(([action]) => (
                  <form method="post" action={`/admin/submissions/${r.id}/${action}`} class="inline">
                    <CsrfField ctx={ctx} />
                    <button
                      type="submit"
                      class={action === 'delete' ? 'danger' : undefined}
                      data-action={action}
                    >
                      {ctx.t.adminWords.actions[action] ?? action}
                    </button>
                  </form>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
    <h2>{ctx.t.tokens}</h2>
    <p class="note">
      <code>rumedbench serve token create --team NAME</code> · <code>rumedbench serve token revoke ID</code>
    </p>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">{ctx.t.tokenId}</th>
            <th scope="col">{ctx.t.team}</th>
            <th scope="col">{ctx.t.created}</th>
            <th scope="col">{ctx.t.revoked}</th>
          </tr>
        </thead>
        <tbody>
          {tokens.length === 0 ? (
            <tr>
              <td colspan={4} class="note">
                {ctx.t.noTokens}
              </td>
            </tr>
          ) : (
            ''
          )}
          {tokens.map((t) => (
            <tr>
              <td>
                <code>{t.id}</code>
              </td>
              <td>{t.team}</td>
              <td>
                <When ctx={ctx} iso={t.created_at} />
              </td>
              <td>{t.revoked_at ? <When ctx={ctx} iso={t.revoked_at} /> : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
    <h2>{ctx.t.audit}</h2>
    <div class="table-wrap">
      <table class="audit">
        <tbody>
          {audit.map((a) => (
            <tr>
              <td>
                <When ctx={ctx} iso={a.at} />
              </td>
              <td>{actorText(ctx, a.actor)}</td>
              <td data-action={a.action}>{ctx.t.adminWords.log[a.action] ?? a.action}</td>
              <td>{a.submission_id ? <code>{a.submission_id}</code> : ''}</td>
              <td>
                <code>{a.detail}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  </Layout>
);

export const AdminSubmissionPage: FC<{ ctx: PageContext } & AdminSubmission> = ({
  ctx,
  row,
  entry,
  files,
}) => (
  <Layout ctx={ctx} title={`${ctx.t.admin}: ${row.model}`}>
    <h1>{row.model}</h1>
    <p class="note">
      <code>{row.id}</code> · {ctx.t.adminWords.status[row.status] ?? row.status} ·{' '}
      {ctx.t.adminWords.board[row.board] ?? row.board} · <When ctx={ctx} iso={row.created_at} /> ·{' '}
      <code>sha256 {row.content_hash.slice(0, 16)}…</code>
    </p>
    {entry.result?.errors.length ? (
      <IssueList issues={entry.result.errors.slice(0, 200)} lang={ctx.lang} />
    ) : (
      ''
    )}
    <p class="note">{files.map((f) => ctx.t.adminWords.characters(f.name, f.chars)).join(', ')}</p>
    <h2>{ctx.t.edit}</h2>
    <form method="post" action={`/admin/submissions/${row.id}/edit`} class="upload">
      <CsrfField ctx={ctx} />
      <SubmissionFields
        ctx={ctx}
        values={{
          model: row.model,
          team: row.team,
          kind: row.kind,
          params: row.params ?? '',
          link: row.link ?? '',
          description: row.description,
          openWeights: row.open_weights === 1,
        }}
      />
      <button type="submit">{ctx.t.save}</button>
    </form>
  </Layout>
);
