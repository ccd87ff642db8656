/**
 * Names people are shown (issue #42, item 7), in process on SQLite and PostgreSQL, as an attacker would send them: a
 * model name, a description and a link full of terminal escapes, bidi overrides and zero-width characters, through
 * the upload API, and the same already in the database from before the fix. Invariant: no displayed name, on a page,
 * in the JSON API or in the CSV, holds a control, bidi or zero-width character; and a team that only looks like an
 * existing one is created with a warning naming that team.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbenchWith } from '../../test/helpers/cli.js';
import { ENGINES } from '../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../test/helpers/fixture-data.js';
import { type Body, useLeaderboardApp } from '../../test/helpers/leaderboard-app.js';
import { getSubmission } from './db/shared.js';
import { openLeaderboard } from './serve.js';

const DATA = fixtureDataDir();
const PREDICTIONS = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-names-p-')), 2);
const danet = () => [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(PREDICTIONS, 'RuMedDaNet.jsonl')) }];

/**
 * Every character class the attacker used: controls (BEL, ESC and its sequences), NEL, LS, PS, bidi embeddings,
 * overrides, isolates and marks, zero-width characters. Tab, CR and LF are the pages' and the CSV's own.
 */
const HOSTILE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;
const NASTY = {
  model: '\u001b[2J\u001b[1;31mGPT\u202e4o\u202c\u0007 Мед\u200bМодель\u2028v2\u0085',
  description: 'first line\u2029second \u2066line\u2069\u001b]0;pwned\u0007\r\nthird\uFEFF',
  params: '7B\u200d',
  link: 'https://example.org/\u202emodel',
};
const CLEAN = {
  model: 'GPT4o МедМодель v2',
  description: 'first line\nsecond line\nthird',
  params: '7B',
  link: 'https://example.org/model',
};

describe('names people are shown (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, DATA);

    /** Everything a visitor gets about entries: both pages, the JSON API, the CSV. */
    const everywhere = async (id: string) => {
      const texts: [string, string][] = [];
      for (const path of ['/', '/?lang=ru', `/submissions/${id}`, '/board/public.csv']) {
        const res = await t.request(path);
        expect(res.status, `${path} ${t.logged.join('\n')}`).toBe(200);
        texts.push([path, await res.text()]);
      }
      for (const path of ['/api/boards/public', `/api/submissions/${id}`]) {
        // Parsed, so that an escaped "\u001b" in the JSON text counts as what it is.
        const values: string[] = [];
        JSON.parse(await (await t.request(path)).text(), (_k, v) => {
          if (typeof v === 'string') values.push(v);
          return v;
        });
        texts.push([path, values.join('\n')]);
      }
      return texts;
    };
    const hostileIn = (texts: [string, string][]) =>
      texts.filter(([, text]) => HOSTILE.test(text)).map(([p]) => p);

    it('cleans an uploaded name, description and link where the upload is accepted', async () => {
      const { token, team, warning } = await t.lb.admin.createToken('\u202eTeam\u0007 Один\u200b\r\n');
      expect([team, warning]).toEqual(['Team Один', null]);
      const { res, body } = await t.upload(
        danet(),
        { ...NASTY, kind: 'LLM' },
        { authorization: `Bearer ${token}` },
      );
      expect(res.status, JSON.stringify(body)).toBe(201);
      const id = body.id as string;
      // Stored cleaned (read past the service, which cleans at display too).
      const stored = await getSubmission(t.lb.db.db, id);
      expect(stored && [stored.model, stored.team, stored.description, stored.params, stored.link]).toEqual([
        CLEAN.model,
        'Team Один',
        CLEAN.description,
        CLEAN.params,
        CLEAN.link,
      ]);
      expect(hostileIn(await everywhere(id))).toEqual([]);
      const entry = (await (await t.request(`/api/submissions/${id}`)).json()) as Body;
      expect([entry.model, entry.team, entry.description, entry.params, entry.link]).toEqual([
        CLEAN.model,
        'Team Один',
        CLEAN.description,
        CLEAN.params,
        CLEAN.link,
      ]);
    });

    it('cleans rows stored before the fix wherever they are shown, the admin’s pages too', async () => {
      const { res, body } = await t.upload(danet(), { model: 'old row', kind: 'LLM' });
      expect(res.status).toBe(201);
      const id = body.id as string;
      // As an older release stored it: the raw text, written past the service.
      await t.lb.db.db
        .updateTable('submissions')
        .set({ ...NASTY, team: '\u202eOld\u0007 Team\u2028' })
        .where('id', '=', id)
        .execute();
      t.lb.boards.invalidate();
      const texts = await everywhere(id);
      expect(hostileIn(texts)).toEqual([]);
      const entry = (await (await t.request(`/api/submissions/${id}`)).json()) as Body;
      expect([entry.model, entry.team, entry.description, entry.params, entry.link]).toEqual([
        CLEAN.model,
        'Old Team',
        CLEAN.description,
        CLEAN.params,
        CLEAN.link,
      ]);
      const csv = (texts.find(([p]) => p === '/board/public.csv')?.[1] ?? '').split('\r\n');
      expect(
        csv
          .find((l) => l.includes(id))
          ?.split(',')
          .slice(1, 4),
      ).toEqual([id, CLEAN.model, 'Old Team']);
      // The admin's overview and the submission's admin page, seen with the admin's powers.
      const overview = await t.lb.admin.overview();
      expect(
        overview.rows.filter((r) => HOSTILE.test(`${r.model}${r.team}${r.description}${r.link}`)),
      ).toEqual([]);
      const admin = await t.lb.admin.submission(id);
      expect([admin.row.model, admin.entry.model, admin.entry.team]).toEqual([
        CLEAN.model,
        CLEAN.model,
        'Old Team',
      ]);
    });

    it('writes the CSV so that no spreadsheet runs a cell, quoting cells as RFC 4180 says', async () => {
      const model = '=HYPERLINK("https://evil.example","a, b")';
      const { res, body } = await t.upload(danet(), { model, kind: 'LLM' });
      expect(res.status).toBe(201);
      const csv = await (await t.request('/board/public.csv')).text();
      const line = csv.split('\r\n').find((l) => l.includes(body.id as string)) ?? '';
      expect(line).toContain(`,${body.id},"'=HYPERLINK(""https://evil.example"",""a, b"")",`);
      for (const lead of ['+1', '-1', '@SUM(A1)']) {
        const r = await t.upload(danet(), { model: `${lead} model`, kind: 'LLM' });
        const row = (await (await t.request('/board/public.csv')).text())
          .split('\r\n')
          .find((l) => l.includes(r.body.id as string));
        expect(row).toContain(`,${r.body.id},'${lead} model,`);
      }
    });

    it('creates a team that only looks like an existing one, with a warning that names it', async () => {
      const { warning: first } = await t.lb.admin.createToken('Sber AI');
      expect(first).toBeNull();
      const lookalikes = [
        'Sbеr AI', // Cyrillic е
        'SBER ai', // case
        'Ｓｂｅｒ ＡＩ', // fullwidth forms (NFKC)
        'Ѕbеr АІ', // Cyrillic Ѕ, е, А, І
        'Sber\u200b AI', // a zero-width space, cleaned away: the very name, so no new lookalike but the same team
      ];
      const answers = [];
      for (const team of lookalikes) {
        const r = await t.lb.admin.createToken(team);
        answers.push([r.team, r.warning?.code ?? null, r.warning?.existing ?? null]);
      }
      expect(answers).toEqual([
        ['Sbеr AI', 'TEAM_LOOKALIKE', 'Sber AI'],
        ['SBER ai', 'TEAM_LOOKALIKE', 'Sber AI'],
        ['Ｓｂｅｒ ＡＩ', 'TEAM_LOOKALIKE', 'Sber AI'],
        ['Ѕbеr АІ', 'TEAM_LOOKALIKE', 'Sber AI'],
        ['Sber AI', null, null],
      ]);
      // Another token for the very same team, or another team altogether: no warning.
      expect((await t.lb.admin.createToken('Sber AI')).warning).toBeNull();
      expect((await t.lb.admin.createToken('Yandex Med')).warning).toBeNull();
    });
  });
});

describe('rumedbench serve token create', () => {
  it('prints a one-line warning naming the existing team a new one looks like, and creates it', async () => {
    const db = join(mkdtempSync(join(tmpdir(), 'rumedbench-names-db-')), 'board.sqlite');
    const env = { RUMEDBENCH_DATA: DATA };
    expect(
      (await rumedbenchWith(env, 'serve', 'token', 'create', '--team', 'MedTeam', '--db', db)).code,
    ).toBe(0);
    const r = await rumedbenchWith(env, 'serve', 'token', 'create', '--team', 'MеdTеam\u0007', '--db', db);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^team: {2}MеdTеam\nid: {4}\S+\ntoken: rmb_\S+\n$/);
    const warnings = r.stderr.split('\n').filter((l) => l.startsWith('warning:'));
    expect(warnings).toEqual([
      'warning: the team "MеdTеam" looks like the existing team "MedTeam" (characters not in it: U+0435); created as another team',
    ]);
    const lb = await openLeaderboard({ dataDir: DATA, db, threads: 1 });
    try {
      expect((await lb.admin.overview()).tokens.map((tk) => tk.team)).toEqual(['MedTeam', 'MеdTеam']);
    } finally {
      await lb.close();
    }
  });
});
