/**
 * The Ladder attacked from outside (issue #42), against a real `rumedbench serve` (the built CLI, a real port, a
 * SQLite file) holding made-up hidden gold: the closed tests and ECG2Pathology's closed and public test gold. Each
 * attack counts the hidden labels it recovers against what guessing recovers.
 *
 * The invariant under attack (src/metrics/ladder.ts): **an upload that differs from the team's best in one item is
 * never an improvement, and an identical re-upload is never one.** So one-item probes answer the same whatever the
 * gold, from every state an uploader can reach; one ladder per uploader and board, on all its hidden tasks at once;
 * and the boosting attack of Blum & Hardt (2015, §5) gains little next to the same attack on exact scores.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRng } from '../../src/metrics/rng.js';
import { rumedbenchOk, rumedbenchOkWith } from '../helpers/cli.js';
import { writeFixtureData } from '../helpers/fixture-data.js';
import { type ServerProcess, startServe, uploadTo } from '../helpers/server.js';

const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');
const rng = createRng(42);
const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;

// Unequal task sizes, as in the real private tests (256, 500, 400 … items): the overall's exact value is then off the
// release's 1/N grid, which is where the old Ladder leaked.
const SIZES = { RuMedDaNet: 200, RuMedNLI: 130, RuMedTest: 170, ECG2Pathology: 70 };
const NLI = ['entailment', 'contradiction', 'neutral'];
const OPTIONS = ['1', '2', '3', '4'];
/** ECG2Pathology classes 0–72: most records show class 37; rare classes make one record's label worth much. */
const ECG_CLASSES = Array.from({ length: 73 }, (_, i) => i);

interface Answers {
  RuMedDaNet: string[];
  RuMedNLI: string[];
  RuMedTest: string[];
  ECG2Pathology: number[][];
}
type Task = keyof Answers;

const dir = mkdtempSync(join(tmpdir(), 'rumedbench-ladder-attacks-'));
const data = writeFixtureData(join(dir, 'data'), { n: SIZES.RuMedDaNet });
const idsOf = (task: string, n: number): string[] => {
  const key = task === 'RuMedTest' ? 'idx' : 'pairID';
  const lines = readFileSync(join(data, task, 'private_test_v1.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .slice(0, n);
  writeFileSync(join(data, task, 'private_test_v1.jsonl'), `${lines.join('\n')}\n`);
  return lines.map((l) => String((JSON.parse(l) as Record<string, unknown>)[key]));
};
const ids: Record<Task, string[]> = {
  RuMedDaNet: idsOf('RuMedDaNet', SIZES.RuMedDaNet),
  RuMedNLI: idsOf('RuMedNLI', SIZES.RuMedNLI),
  RuMedTest: idsOf('RuMedTest', SIZES.RuMedTest),
  ECG2Pathology: Array.from(
    { length: SIZES.ECG2Pathology },
    (_, i) => `${String(i + 1).padStart(5, '0')}_hr`,
  ),
};
const ecgGold = () =>
  ids.ECG2Pathology.map(() => {
    const rare = pick(ECG_CLASSES);
    return rng.next() < 0.5 || rare === 37 ? [37] : [37, rare];
  });
/** The hidden gold, made up: nobody but the server (and this test, to count what an attack recovers) knows it. */
const gold: Answers = {
  RuMedDaNet: ids.RuMedDaNet.map(() => pick(['да', 'нет'])),
  RuMedNLI: ids.RuMedNLI.map(() => pick(NLI)),
  RuMedTest: ids.RuMedTest.map(() => pick(OPTIONS)),
  ECG2Pathology: ecgGold(),
};
const publicEcgGold = ecgGold();

const FIELDS: Record<Task, [string, string]> = {
  RuMedDaNet: ['pairID', 'answer'],
  RuMedNLI: ['pairID', 'gold_label'],
  RuMedTest: ['idx', 'answer'],
  ECG2Pathology: ['record_name', 'labels'],
};
const fileOf = (task: Task, answers: readonly unknown[]) => ({
  name: `${task}.jsonl`,
  data: jsonl(ids[task].map((id, i) => ({ [FIELDS[task][0]]: id, [FIELDS[task][1]]: answers[i] }))),
});
const filesOf = (
  a: Answers,
  tasks: readonly Task[] = ['RuMedDaNet', 'RuMedNLI', 'RuMedTest', 'ECG2Pathology'],
) => tasks.map((t) => fileOf(t, a[t]));
const copy = (a: Answers): Answers => ({
  RuMedDaNet: [...a.RuMedDaNet],
  RuMedNLI: [...a.RuMedNLI],
  RuMedTest: [...a.RuMedTest],
  ECG2Pathology: a.ECG2Pathology.map((l) => [...l]),
});
/** What an uploader who knows nothing sends first. */
const naive = (): Answers => ({
  RuMedDaNet: ids.RuMedDaNet.map(() => 'да'),
  RuMedNLI: ids.RuMedNLI.map(() => 'neutral'),
  RuMedTest: ids.RuMedTest.map(() => '1'),
  ECG2Pathology: ids.ECG2Pathology.map(() => [37]),
});

interface Answer {
  status: number;
  overall: unknown;
  ladder: unknown;
  /** Everything in the answer that could carry a score: the result's tasks and overalls. */
  scores: string;
  warnings: string[];
}
type Upload = (files: { name: string; data: string }[], board?: string) => Promise<Answer>;

async function start(
  args: string[],
  db: string,
): Promise<{ server: ServerProcess; as: (team: string) => Promise<Upload> }> {
  const server = await startServe(
    [
      '--db',
      db,
      '--tasks-dir',
      'ECG2Pathology',
      '--closed-quota-per-day',
      '100000',
      '--token-per-minute',
      '100000',
      ...args,
    ],
    { RUMEDBENCH_DATA: data },
  );
  const as = async (team: string): Promise<Upload> => {
    // The test's own data folder: a clone with nothing beside it has no other.
    const out = (
      await rumedbenchOkWith(
        { RUMEDBENCH_DATA: data },
        'serve',
        'token',
        'create',
        '--team',
        team,
        '--db',
        db,
      )
    ).stdout;
    const token = /token: (\S+)/.exec(out)?.[1] as string;
    return async (files, board = 'closed') => {
      const r = await uploadTo(
        server.url,
        files,
        { model: `${team} probe`, kind: 'LLM', board },
        {
          authorization: `Bearer ${token}`,
        },
      );
      const result = (r.body.result ?? {}) as Record<string, unknown>;
      return {
        status: r.status,
        overall: r.body.overall,
        ladder: r.body.ladder,
        scores: JSON.stringify([result.tasks, result.overall, result.overall_ci, result.overall_six]),
        warnings: ((r.body.warnings ?? []) as { code: string }[]).map((w) => w.code),
      };
    };
  };
  return { server, as };
}

describe('the Ladder under attack, against a real serve with made-up hidden gold', () => {
  let ladder: Awaited<ReturnType<typeof start>>;
  let exact: Awaited<ReturnType<typeof start>>;

  beforeAll(async () => {
    const closedGold = join(dir, 'closed-gold');
    const publicGold = join(dir, 'public-gold');
    mkdirSync(closedGold);
    mkdirSync(publicGold);
    for (const t of Object.keys(FIELDS) as Task[])
      writeFileSync(
        join(closedGold, `${t}.jsonl`),
        jsonl(
          ids[t].map((id, i) => ({
            [FIELDS[t][0]]: id,
            [t === 'ECG2Pathology' ? 'labels' : 'answer']: gold[t][i],
          })),
        ),
      );
    writeFileSync(
      join(publicGold, 'ECG2Pathology.jsonl'),
      jsonl(ids.ECG2Pathology.map((id, i) => ({ record_name: id, labels: publicEcgGold[i] }))),
    );
    const dbs = { ladder: join(dir, 'ladder.sqlite'), exact: join(dir, 'exact.sqlite') };
    for (const db of Object.values(dbs)) {
      const common = ['--tasks-dir', 'ECG2Pathology', '--db', db, '--data', data];
      await rumedbenchOk('serve', 'import-gold', closedGold, ...common);
      await rumedbenchOk('serve', 'import-gold', publicGold, '--split', 'test', ...common);
    }
    [ladder, exact] = await Promise.all([
      start([], dbs.ladder),
      start(['--closed-release', 'exact'], dbs.exact),
    ]);
  }, 120_000);
  afterAll(async () => {
    await ladder?.server.stop();
    await exact?.server.stop();
  });

  it('an identical re-upload is never an improvement, and one item flipped answers the same from every state reached', async () => {
    const upload = await ladder.as('flippers');
    // The states an uploader reaches by improving: the naive answers, then ever more of RuMedDaNet right.
    const states = [0, 40, 80, 120].map((right) => {
      const a = naive();
      for (let i = 0; i < right; i++) a.RuMedDaNet[i] = gold.RuMedDaNet[i] as string;
      return a;
    });
    let probes = 0;
    let rightProbes = 0;
    let recovered = 0;
    for (const [s, state] of states.entries()) {
      const at = await upload(filesOf(state));
      expect([at.status, (at.ladder as { improved: boolean }).improved], `state ${s}`).toEqual([201, true]);
      const same = {
        status: 201,
        overall: at.overall,
        ladder: { mechanism: 'ladder', improved: false },
        scores: at.scores,
        warnings: [],
      };
      expect(await upload(filesOf(state))).toEqual(same);
      // One item of each task changed to every other answer (ECG2Pathology: one label added, in the gold or not).
      const probesOf = (): { task: Task; i: number; answers: Answers; right: boolean }[] => {
        const out: { task: Task; i: number; answers: Answers; right: boolean }[] = [];
        for (let k = 0; k < 5; k++) {
          const i = 150 + k * 9 + s;
          const a = copy(state);
          a.RuMedDaNet[i] = a.RuMedDaNet[i] === 'да' ? 'нет' : 'да';
          out.push({ task: 'RuMedDaNet', i, answers: a, right: a.RuMedDaNet[i] === gold.RuMedDaNet[i] });
          const j = k * 25 + s;
          for (const label of NLI.filter((l) => l !== state.RuMedNLI[j])) {
            const b = copy(state);
            b.RuMedNLI[j] = label;
            out.push({ task: 'RuMedNLI', i: j, answers: b, right: label === gold.RuMedNLI[j] });
          }
          for (const option of OPTIONS.filter((o) => o !== state.RuMedTest[j])) {
            const b = copy(state);
            b.RuMedTest[j] = option;
            out.push({ task: 'RuMedTest', i: j, answers: b, right: option === gold.RuMedTest[j] });
          }
          const r = k * 13 + s;
          const inGold = (gold.ECG2Pathology[r] as number[]).find((c) => c !== 37);
          for (const label of [inGold ?? 5, 71 - k]) {
            const b = copy(state);
            b.ECG2Pathology[r] = [...(b.ECG2Pathology[r] as number[]), label];
            out.push({
              task: 'ECG2Pathology',
              i: r,
              answers: b,
              right: (gold.ECG2Pathology[r] as number[]).includes(label),
            });
          }
        }
        return out;
      };
      for (const p of probesOf()) {
        const answer = await upload(filesOf(p.answers));
        expect(answer, `state ${s}, ${p.task} item ${p.i}`).toEqual(same);
        probes += 1;
        if (p.right) rightProbes += 1;
        // The attacker's rule: "improved" means the changed answer is right.
        if ((answer.ladder as { improved: boolean }).improved && p.right) recovered += 1;
      }
    }
    // Guessing recovers nothing either: every probe answered the same, so no right answer was told apart.
    expect({ probes, recovered }).toEqual({ probes: 4 * 5 * 8, recovered: 0 });
    expect(rightProbes).toBeGreaterThan(20);
  });

  it('one label added to one record of ECG2Pathology (macro F1) tells nothing on the public board', async () => {
    const upload = await ladder.as('labellers');
    const base = ids.ECG2Pathology.map(() => [37]);
    const first = await upload([fileOf('ECG2Pathology', base)], 'public');
    const released = (first.ladder as { released: number }).released;
    expect(first.status).toBe(201);
    const same = { mechanism: 'ladder', improved: false, tasks: ['ECG2Pathology'], released };
    let inGold = 0;
    for (let r = 0; r < ids.ECG2Pathology.length; r += 3) {
      const rare = (publicEcgGold[r] as number[]).find((c) => c !== 37);
      for (const label of [rare ?? 11, 72 - (r % 30)]) {
        const a = base.map((l, i) => (i === r ? [...l, label] : l));
        const answer = await upload([fileOf('ECG2Pathology', a)], 'public');
        expect(answer.ladder, `record ${r}, class ${label}`).toEqual(same);
        expect(answer.scores).not.toContain('ECG2Pathology');
        if ((publicEcgGold[r] as number[]).includes(label)) inGold += 1;
      }
    }
    // Labels in the gold were among the probes (each moved the exact macro F1 by a fraction of a point).
    expect(inGold).toBeGreaterThan(5);
  });

  it('has one ladder per uploader and board: a subset of the hidden tasks gets no score at all', async () => {
    const upload = await ladder.as('subsetters');
    const all: Task[] = ['RuMedDaNet', 'RuMedNLI', 'RuMedTest', 'ECG2Pathology'];
    const subsets = Array.from({ length: 15 }, (_, m) => all.filter((_, b) => (m >> b) & 1)).filter(
      (s) => s.length > 0 && s.length < 4,
    );
    expect(subsets.length).toBe(14);
    const a = naive();
    for (const s of subsets) {
      const answer = await upload(filesOf(a, s));
      expect([answer.status, answer.overall, answer.ladder, answer.scores], s.join(',')).toEqual([
        201,
        null,
        undefined,
        JSON.stringify([{}, null, null, null]),
      ]);
      expect(answer.warnings).toContain('CLOSED_INCOMPLETE');
    }
    // The first complete upload opens the team's one ladder.
    const full = await upload(filesOf(a));
    expect(full.ladder).toEqual({ mechanism: 'ladder', improved: true });
  });

  it('climbs one ladder one upload at a time across two server processes on one database', async () => {
    // A second `serve` on the same SQLite file: two uploads of one team race, one to each process.
    const second = await start([], join(dir, 'ladder.sqlite'));
    try {
      const upload = await ladder.as('racers');
      const other = async (files: { name: string; data: string }[]) => {
        const viaSecond = await second.as('racers');
        return viaSecond(files);
      };
      const base = naive();
      expect(((await upload(filesOf(base))).ladder as { improved: boolean }).improved).toBe(true);
      for (let round = 1; round <= 6; round++) {
        // Each round a clear improvement, sent to both processes at once: identical in even rounds, one item apart
        // in odd ones. Exactly one of the two may improve, and both must answer the same release.
        const x = naive();
        for (let i = 0; i < 30 * round; i++) x.RuMedDaNet[i] = gold.RuMedDaNet[i] as string;
        const y = copy(x);
        if (round % 2 === 1) y.RuMedDaNet[199] = y.RuMedDaNet[199] === 'да' ? 'нет' : 'да';
        const [a, b] = await Promise.all([upload(filesOf(x)), other(filesOf(y))]);
        const improved = [a, b].map((r) => (r.ladder as { improved: boolean }).improved).sort();
        expect(improved, `round ${round}`).toEqual([false, true]);
        expect(a.overall, `round ${round}`).toBe(b.overall);
      }
    } finally {
      await second.server.stop();
    }
  });

  it('the boosting attack (Blum & Hardt §5) recovers no more than guessing under the Ladder, and more without it', async () => {
    const k = 150;
    const n = SIZES.RuMedDaNet;
    const vectors = Array.from({ length: k }, () => ids.RuMedDaNet.map(() => pick(['да', 'нет'])));
    /** The attack: the random answers the board marked as better, combined by majority vote. */
    const attack = async (upload: Upload, better: (a: Answer, base: Answer) => boolean) => {
      const base = naive();
      const first = await upload(filesOf(base));
      const chosen: string[][] = [];
      for (const v of vectors) {
        const a = copy(base);
        a.RuMedDaNet = v;
        const answer = await upload(filesOf(a));
        if (better(answer, first)) chosen.push(v);
      }
      const vote = ids.RuMedDaNet.map((_, i) => {
        const yes = chosen.filter((v) => v[i] === 'да').length;
        return yes * 2 > chosen.length
          ? 'да'
          : yes * 2 < chosen.length
            ? 'нет'
            : (base.RuMedDaNet[i] as string);
      });
      return vote.filter((x, i) => x === gold.RuMedDaNet[i]).length;
    };
    const onLadder = await attack(
      await ladder.as('boosters'),
      (a) => (a.ladder as { improved: boolean }).improved,
    );
    const onExact = await attack(
      await exact.as('boosters'),
      (a, base) => Number(a.overall) > Number(base.overall),
    );
    // Guessing (the naive answers, or a coin) gets n/2 ± √n/2 right; three standard deviations above it is chance's
    // ceiling. The Ladder keeps the attack under it; exact scores let the same k uploads past it.
    const ceiling = n / 2 + 3 * (Math.sqrt(n) / 2);
    console.info(
      `[ladder attacks] boosting, k=${k}, n=${n}: ${onLadder} right under the Ladder, ${onExact} with exact scores; guessing ${n / 2}, chance's ceiling ${ceiling.toFixed(1)}`,
    );
    expect(onLadder).toBeLessThanOrEqual(ceiling);
    expect(onExact).toBeGreaterThan(ceiling);
  });
});
