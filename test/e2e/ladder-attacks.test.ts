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
import { createLogger } from '../../src/log.js';
import { createRng } from '../../src/metrics/rng.js';
import { createApp } from '../../src/server/app.js';
import { RELEASE_INVARIANT } from '../../src/server/gold/release.js';
import type { Leaderboard } from '../../src/server/leaderboard.js';
import { openLeaderboard } from '../../src/server/serve.js';
import { addEndpoint } from '../../src/workers/endpoints.js';
import type { QueueDb } from '../../src/workers/store.js';
import { Worker } from '../../src/workers/worker.js';
import { rumedbenchOk, rumedbenchOkWith } from '../helpers/cli.js';
import { rumedbenchProcessWith } from '../helpers/cli-process.js';
import { REPO_ROOT } from '../helpers/data.js';
import { freshDatabase, PG_URL } from '../helpers/engines.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { writeFixtureData, writeFixturePredictions } from '../helpers/fixture-data.js';
import { type ServerProcess, startServe, TEST_ADMIN_TOKEN, uploadTo } from '../helpers/server.js';

const PG_ADMIN = 'k3Y-for-the-ladder-admin-7Rw2pQ9zX4mL';
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
/** The made-up closed gold of the four hidden tasks, as `serve import-gold` takes it, in `folder`. */
const writeClosedGold = (folder: string) => {
  mkdirSync(folder, { recursive: true });
  for (const t of Object.keys(FIELDS) as Task[])
    writeFileSync(
      join(folder, `${t}.jsonl`),
      jsonl(
        ids[t].map((id, i) => ({
          [FIELDS[t][0]]: id,
          [t === 'ECG2Pathology' ? 'labels' : 'answer']: gold[t][i],
        })),
      ),
    );
};
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

/** A team token made by the admin's command (the test's own data folder: a clone with nothing beside it has no other). */
const tokenFor = async (db: string, team: string): Promise<string> =>
  /token: (\S+)/.exec(
    (
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
    ).stdout,
  )?.[1] as string;

/** A board on `db` with ECG2Pathology, its quota and rate out of an attack's way. */
const unlimited = (db: string) => [
  '--db',
  db,
  '--tasks-dir',
  'ECG2Pathology',
  '--closed-quota-per-day',
  '100000',
  '--token-per-minute',
  '100000',
];

async function start(
  args: string[],
  db: string,
): Promise<{ server: ServerProcess; as: (team: string) => Promise<Upload> }> {
  const server = await startServe([...unlimited(db), ...args], { RUMEDBENCH_DATA: data });
  const as = async (team: string): Promise<Upload> => {
    const token = await tokenFor(db, team);
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
    writeClosedGold(closedGold);
    mkdirSync(publicGold);
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

  it('3: the group test on macro F1 (a class added to every record) tells nothing of a class’s positives', async () => {
    const upload = await ladder.as('group-testers');
    // From a best that predicts class 37 alone, each class in turn added to every record, kept where it "improved":
    // macro F1 is a mean over classes, so each probe asks the same of its class whatever was kept before.
    let best = ids.ECG2Pathology.map(() => [37]);
    expect((await upload([fileOf('ECG2Pathology', best)], 'public')).status).toBe(201);
    const positives = (c: number) => publicEcgGold.filter((g) => g.includes(c)).length;
    let told = 0;
    let twoOrMore = 0;
    // Half of the classes probed have two or more positives in the gold (the test knows; the attacker would not).
    const rare = ECG_CLASSES.filter((c) => c !== 37);
    const probed = [
      ...rare.filter((c) => positives(c) >= 2).slice(0, 6),
      ...rare.filter((c) => positives(c) < 2).slice(0, 6),
    ];
    for (const c of probed) {
      const probe = best.map((l) => [...l, c]);
      const answer = await upload([fileOf('ECG2Pathology', probe)], 'public');
      const improved = (answer.ladder as { improved: boolean }).improved;
      if (positives(c) >= 2) twoOrMore += 1;
      // The attacker's rule: "improved" says the class has two or more positives.
      if (improved === positives(c) >= 2) told += 1;
      if (improved) best = probe;
    }
    console.info(
      `[ladder attacks] 3, group tests on macro F1: ${probed.length} classes (${twoOrMore} with two or more positives), ${told} answered as the gold says; always "no" gets ${probed.length - twoOrMore}`,
    );
    // Every answer is "not improved", whatever the class's positives: what answering "no" blind gets.
    expect(told).toBe(probed.length - twoOrMore);
    expect(twoOrMore).toBeGreaterThan(2);
  });

  it('a deleted best keeps its ladder: each probe after the admin deletes the best is answered as before (yield: one RuMedDaNet answer each)', async () => {
    const token = await tokenFor(join(dir, 'ladder.sqlite'), 'deleters');
    const send = async (a: Answers) => {
      const r = await uploadTo(
        ladder.server.url,
        filesOf(a),
        { model: 'deleters probe', kind: 'LLM', board: 'closed' },
        {
          authorization: `Bearer ${token}`,
        },
      );
      expect(r.status).toBe(201);
      return { id: String(r.body.id), overall: r.body.overall as number };
    };
    const remove = async (id: string) =>
      expect(
        (
          await fetch(`${ladder.server.url}/api/admin/submissions/${id}/delete`, {
            method: 'POST',
            headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
          })
        ).status,
      ).toBe(200);
    const base = await send(naive());
    // The attacker's rule: a probe released above the base holds the right answer, below it the wrong one.
    let told = 0;
    let right = 0;
    let best = base.id;
    const flips = Array.from({ length: 12 }, (_, k) => 20 + k * 7);
    for (const i of flips) {
      // The admin deletes the team's best (its own request, or a row it found wrong): the next upload is measured
      // against what the ladder released, not started again.
      await remove(best);
      const a = naive();
      a.RuMedDaNet[i] = 'нет';
      const probe = await send(a);
      best = probe.id;
      if (probe.overall === base.overall) continue;
      told += 1;
      if (probe.overall > base.overall === (gold.RuMedDaNet[i] === 'нет')) right += 1;
    }
    console.info(
      `[ladder attacks] deleted best: ${right} of ${flips.length} RuMedDaNet answers right of ${told} decided; a coin: ${flips.length / 2}`,
    );
    expect({ told, right }).toEqual({ told: 0, right: 0 });
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

/**
 * The paths that go around an upload's Ladder (issue #57): gold imported after the files came, a board restarted with
 * a task it did not hold, a platform evaluation. The invariant they attack, stated at the top of
 * src/server/gold/release.ts: **every score on gold the host holds leaves only as the Ladder of its uploader's identity
 * released it.**
 */
describe('every score on hidden gold passes one release gate, whatever path made it', () => {
  const ecgGold = join(dir, 'ecg-test-gold');
  const publicPredictions = join(dir, 'public-predictions');
  const fields = { model: 'probe', kind: 'LLM' };
  beforeAll(() => {
    mkdirSync(ecgGold, { recursive: true });
    writeFileSync(
      join(ecgGold, 'ECG2Pathology.jsonl'),
      jsonl(ids.ECG2Pathology.map((id, i) => ({ record_name: id, labels: publicEcgGold[i] }))),
    );
    writeFixturePredictions(data, publicPredictions);
  });
  const importEcgGold = (db: string) =>
    rumedbenchOkWith(
      { RUMEDBENCH_DATA: data },
      'serve',
      'import-gold',
      ecgGold,
      '--split',
      'test',
      '--tasks-dir',
      'ECG2Pathology',
      '--db',
      db,
      '--data',
      data,
    );
  /** Probes that each add one class to one record of a base that predicts class 37 everywhere. */
  const labelProbes = (records: number) => {
    const base = ids.ECG2Pathology.map(() => [37]);
    const probes: { labels: number[][]; inGold: boolean }[] = [];
    for (let r = 0; r < records; r++) {
      const rare = (publicEcgGold[r] as number[]).find((c) => c !== 37);
      for (const label of [rare ?? 11, 70 - r]) {
        const labels = base.map((l, i) => (i === r ? [...l, label] : l));
        probes.push({ labels, inGold: (publicEcgGold[r] as number[]).includes(label) });
      }
    }
    return { base, probes };
  };
  /** What a board shows of an entry on hidden gold to anybody: ECG2Pathology's score and the six-task overall. */
  const shown = async (url: string, id: string) => {
    const r = await fetch(`${url}/api/submissions/${id}`);
    const body = (await r.json()) as {
      tasks?: Record<string, { score: number }>;
      overall_six?: number | null;
    };
    return r.status === 200
      ? { ecg: body.tasks?.ECG2Pathology?.score, six: body.overall_six ?? null }
      : { ecg: undefined, six: null };
  };
  /**
   * The attacker's rule: a probe shown above the base holds a label of the gold, one shown not above it does not (a
   * class outside the gold leaves macro F1 as it was or lowers it). Counts the pairs it decides, and how many right.
   */
  const attack = async (url: string, baseId: string, probes: readonly { id: string; inGold: boolean }[]) => {
    const base = await shown(url, baseId);
    let told = 0;
    let right = 0;
    for (const p of probes) {
      const s = await shown(url, p.id);
      if (s.ecg === undefined || base.ecg === undefined) continue;
      told += 1;
      if (s.ecg > base.ecg === p.inGold) right += 1;
    }
    return { told, right, six: base.six };
  };

  it('states its invariant, this one, at the top of the module that keeps it', () => {
    const stated =
      "every score on gold the host holds leaves only as the Ladder of its uploader's identity released it";
    const top = (
      readFileSync(join(REPO_ROOT, 'src/server/gold/release.ts'), 'utf8').split('*/')[0] as string
    ).slice(3);
    const bold = /\*\*([^*]+)\*\*/.exec(top.replace(/\n \* /g, ' '))?.[1];
    expect([bold?.replace(/\.$/, ''), RELEASE_INVARIANT]).toEqual([stated, stated]);
  });

  it('1a: uploads refused for want of a board stay refused when the gold comes (yield: one (record, class) pair each)', async () => {
    const db = join(dir, 'refused.sqlite');
    const args = unlimited(db);
    let server = await startServe(args, { RUMEDBENCH_DATA: data });
    const token = await tokenFor(db, 'refused');
    const { base, probes } = labelProbes(12);
    const sent: { id: string; inGold: boolean }[] = [];
    let baseId = '';
    try {
      for (const p of [{ labels: base, inGold: false }, ...probes]) {
        // No board field: ECG2Pathology is on both boards and its records are the host's, so the ids cannot tell.
        const r = await uploadTo(server.url, [fileOf('ECG2Pathology', p.labels)], fields, {
          authorization: `Bearer ${token}`,
        });
        const codes = ((r.body.errors ?? []) as { code: string }[]).map((e) => e.code);
        expect([r.status, codes]).toEqual([422, ['WRONG_BOARD']]);
        if (baseId === '') baseId = String(r.body.id);
        else sent.push({ id: String(r.body.id), inGold: p.inGold });
      }
    } finally {
      await server.stop();
    }
    await importEcgGold(db);
    server = await startServe(args, { RUMEDBENCH_DATA: data });
    try {
      const found = await attack(server.url, baseId, sent);
      console.info(
        `[ladder attacks] 1a, refused then re-scored: ${found.right} of ${sent.length} (record, class) pairs right of ${found.told} decided; a coin: ${sent.length / 2}`,
      );
      expect({ told: found.told, right: found.right }).toEqual({ told: 0, right: 0 });
      // Still rejected: nobody but the admin sees them, as before the gold came.
      for (const id of [baseId, ...sent.map((s) => s.id)])
        expect((await fetch(`${server.url}/api/submissions/${id}`)).status, id).toBe(404);
    } finally {
      await server.stop();
    }
  });

  it('1b: a task file stored before its board held the task is set aside, not scored, after a restart with the task and its gold', async () => {
    const db = join(dir, 'no-tasks.sqlite');
    const common = ['--db', db, '--anonymous-per-minute', '100000'];
    let server = await startServe(common, { RUMEDBENCH_DATA: data });
    const publicFiles = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'].map((t) => ({
      name: `${t}.jsonl`,
      data: readFileSync(join(publicPredictions, `${t}.jsonl`), 'utf8'),
    }));
    const { base, probes } = labelProbes(8);
    const sent: { id: string; inGold: boolean }[] = [];
    let baseId = '';
    try {
      for (const p of [{ labels: base, inGold: false }, ...probes]) {
        // Anonymous: the board holds no task on hidden gold yet, so no token is asked for.
        const r = await uploadTo(server.url, [...publicFiles, fileOf('ECG2Pathology', p.labels)], {
          ...fields,
          board: 'public',
        });
        const codes = ((r.body.warnings ?? []) as { code: string }[]).map((e) => e.code);
        expect([r.status, codes.includes('PLATFORM_ONLY_TASK')]).toEqual([201, true]);
        if (baseId === '') baseId = String(r.body.id);
        else sent.push({ id: String(r.body.id), inGold: p.inGold });
      }
    } finally {
      await server.stop();
    }
    await importEcgGold(db);
    server = await startServe([...common, '--tasks-dir', 'ECG2Pathology'], { RUMEDBENCH_DATA: data });
    try {
      const found = await attack(server.url, baseId, sent);
      console.info(
        `[ladder attacks] 1b, stored before the task, scored after: ${found.right} of ${sent.length} (record, class) pairs right of ${found.told} decided; a coin: ${sent.length / 2}`,
      );
      expect({ told: found.told, right: found.right, six: found.six }).toEqual({
        told: 0,
        right: 0,
        six: null,
      });
      // The entry keeps its five public scores, and says which file was set aside and why.
      const entry = (await (await fetch(`${server.url}/api/submissions/${baseId}`)).json()) as {
        tasks: Record<string, unknown>;
        set_aside?: { task: string; file: string }[];
      };
      expect(Object.keys(entry.tasks).sort()).toEqual([
        'RuMedDaNet',
        'RuMedNER',
        'RuMedNLI',
        'RuMedSymptomRec',
        'RuMedTop3',
      ]);
      expect(entry.set_aside?.map((w) => [w.task, w.file])).toEqual([
        ['ECG2Pathology', 'ECG2Pathology.jsonl'],
      ]);
    } finally {
      await server.stop();
    }
  });
  it('1c: a restart without the task shows each entry on hidden gold as its ladder released it, on every surface (yield: one (record, class) pair each)', async () => {
    const db = join(dir, 'restart-without-task.sqlite');
    await importEcgGold(db);
    let server = await startServe(unlimited(db), { RUMEDBENCH_DATA: data });
    const token = await tokenFor(db, 'restarters');
    const { base, probes } = labelProbes(12);
    const sent: { id: string; inGold: boolean }[] = [];
    let baseId = '';
    let released = 0;
    try {
      for (const p of [{ labels: base, inGold: false }, ...probes]) {
        const r = await uploadTo(
          server.url,
          [fileOf('ECG2Pathology', p.labels)],
          { ...fields, board: 'public' },
          { authorization: `Bearer ${token}` },
        );
        const ladder = r.body.ladder as { improved: boolean; released: number };
        expect([r.status, ladder.improved]).toEqual([201, baseId === '']);
        if (baseId === '') {
          baseId = String(r.body.id);
          released = ladder.released;
        } else sent.push({ id: String(r.body.id), inGold: p.inGold });
      }
    } finally {
      await server.stop();
    }
    // The admin restarts the board without `--tasks-dir`: this process does not hold ECG2Pathology, the rows still do.
    server = await startServe(['--db', db, '--token-per-minute', '100000'], { RUMEDBENCH_DATA: data });
    try {
      const found = await attack(server.url, baseId, sent);
      console.info(
        `[ladder attacks] 1c, restarted without the task: ${found.right} of ${sent.length} (record, class) pairs right of ${found.told} decided; "not in the gold" said blind: ${sent.filter((s) => !s.inGold).length}`,
      );
      // Every probe shows the release of the base, which it did not improve on: the attacker's rule says "not in the
      // gold" to all of them, what answering blind gets.
      expect(found).toEqual({
        told: sent.length,
        right: sent.filter((s) => !s.inGold).length,
        six: found.six,
      });
      for (const id of [baseId, ...sent.map((s) => s.id)])
        expect((await shown(server.url, id)).ecg, id).toBe(released);
      const board = (await (await fetch(`${server.url}/api/boards/public?limit=100`)).json()) as {
        entries: { id: string; tasks: Record<string, { score: number }> }[];
      };
      const cells = board.entries
        .filter((e) => e.tasks.ECG2Pathology !== undefined)
        .map((e) => e.tasks.ECG2Pathology?.score);
      expect(cells).toEqual(Array.from({ length: sent.length + 1 }, () => released));
    } finally {
      await server.stop();
    }
  });

  it('3: import-gold without a task the board’s rows were scored on is refused, and their ladders stand (yield: one RuMedDaNet answer)', async () => {
    const db = join(dir, 'import-subset.sqlite');
    const closedGold = join(dir, 'closed-gold-subset');
    writeClosedGold(closedGold);
    const withEcg = ['--tasks-dir', 'ECG2Pathology', '--db', db, '--data', data];
    await rumedbenchOkWith({ RUMEDBENCH_DATA: data }, 'serve', 'import-gold', closedGold, ...withEcg);
    let board = await start([], db);
    const upload = await board.as('importers');
    const first = await upload(filesOf(naive()));
    expect(first.ladder).toEqual({ mechanism: 'ladder', improved: true });
    await board.server.stop();
    // The admin imports the closed gold again from a process that does not hold ECG2Pathology (its own process: the
    // task registry of this one holds it already).
    const three = join(dir, 'closed-gold-three');
    mkdirSync(three, { recursive: true });
    for (const t of ['RuMedDaNet', 'RuMedNLI', 'RuMedTest'] as const)
      writeFileSync(join(three, `${t}.jsonl`), readFileSync(join(closedGold, `${t}.jsonl`), 'utf8'));
    const refused = await rumedbenchProcessWith(
      { RUMEDBENCH_DATA: data },
      'serve',
      'import-gold',
      three,
      '--db',
      db,
      '--data',
      data,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/ECG2Pathology[^\n]*--tasks-dir|--tasks-dir[^\n]*ECG2Pathology/);
    // The ladder stands where it was: a one-item probe from the team's best is answered as before, never exactly.
    board = await start([], db);
    try {
      const upload = await board.as('importers');
      let told = 0;
      let right = 0;
      for (const i of [3, 17, 31, 45, 59, 73]) {
        const a = naive();
        a.RuMedDaNet[i] = 'нет';
        const probe = await upload(filesOf(a));
        if (probe.overall === first.overall && probe.ladder !== undefined) continue;
        told += 1;
        if ((probe.overall as number) > (first.overall as number) === (gold.RuMedDaNet[i] === 'нет'))
          right += 1;
      }
      console.info(
        `[ladder attacks] 3, import-gold on fewer tasks: ${right} of 6 RuMedDaNet answers right of ${told} decided`,
      );
      expect({ told, right }).toEqual({ told: 0, right: 0 });
    } finally {
      await board.server.stop();
    }
  });
});

/**
 * Attack 2 (issue #57): a team's own endpoint evaluated by the platform (POST /api/evaluations, approved, run by a
 * real worker on a throwaway PostgreSQL), its server changing one RuMedDaNet answer between runs. In process (the
 * app's routes through `app.request`), as platform runs need the queue's database and a worker.
 */
describe.skipIf(!PG_URL)(
  'platform evaluations climb the Ladder of the team whose endpoint it is (PostgreSQL)',
  () => {
    const closedIds = { RuMedDaNet: 'pairID', RuMedNLI: 'pairID', RuMedTest: 'idx' } as const;
    const log = createLogger('silent');
    let lb: Leaderboard;
    let app: ReturnType<typeof createApp>;
    let model: FakeOpenAI;
    let pgData: string;
    /** RuMedDaNet's contexts, in the file's order, and the made-up gold of each. */
    const questions: string[] = [];
    const danetGold: string[] = [];
    /** The items the team's server answers "нет" to (the rest "да"). */
    const flipped = new Set<number>();

    beforeAll(async () => {
      pgData = writeFixtureData(mkdtempSync(join(tmpdir(), 'rumedbench-ladder-pg-data-')));
      const goldDir = mkdtempSync(join(tmpdir(), 'rumedbench-ladder-pg-gold-'));
      const coin = createRng(57);
      for (const [task, idField] of Object.entries(closedIds)) {
        const records = readFileSync(join(pgData, task, 'private_test_v1.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, string>);
        const answers = records.map(() =>
          task === 'RuMedDaNet'
            ? coin.next() < 0.5
              ? 'да'
              : 'нет'
            : task === 'RuMedNLI'
              ? (NLI[coin.int(3)] as string)
              : (OPTIONS[coin.int(4)] as string),
        );
        if (task === 'RuMedDaNet')
          for (const [i, r] of records.entries()) {
            // Its context is the record's own text (the questions repeat).
            questions.push(r.context as string);
            danetGold.push(answers[i] as string);
          }
        writeFileSync(
          join(goldDir, `${task}.jsonl`),
          jsonl(records.map((r, i) => ({ [idField]: r[idField], answer: answers[i] }))),
        );
      }
      lb = await openLeaderboard({
        dataDir: pgData,
        db: await freshDatabase('postgres'),
        bootstrap: 0,
        queue: true,
        log,
      });
      await lb.admin.ensureAdminSecret(PG_ADMIN);
      await lb.gold.importGold(goldDir);
      app = createApp({ lb, log });
      model = await startFakeOpenAI({
        reply: (body) => {
          const last = body.messages.at(-1)?.content ?? '';
          const i = questions.findIndex((q) => last.includes(q));
          if (i >= 0) return `Ответ: ${flipped.has(i) ? 'нет' : 'да'}`;
          if (/entailment|contradiction|neutral/.test(last)) return 'Ответ: neutral';
          return 'Ответ: 1';
        },
      });
      await addEndpoint(
        lb.runs.queue as QueueDb,
        {
          name: 'probers-model',
          provider: 'openai',
          base_url: model.url,
          model: 'probers-model',
          api_key_env: null,
          team: 'Probers',
        },
        { allowPrivate: true },
      );
    }, 120_000);
    afterAll(async () => {
      await model?.close();
      await lb?.close();
    });

    const post = (path: string, body: unknown, token: string) =>
      app.request(path, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    it('2: each approved run is released by the team’s Ladder, never as exact per-task scores (yield: one label a run)', async () => {
      const { token } = await lb.admin.createToken('Probers');
      /** One evaluation the team asks for, the admin approves and a worker runs; answers its closed entry as shown. */
      const evaluate = async () => {
        const asked = (await (
          await post('/api/evaluations', { endpoint: 'probers-model', boards: 'closed' }, token)
        ).json()) as { id: string; status: string };
        expect(asked.status).toBe('pending');
        expect((await post(`/api/admin/evaluations/${asked.id}/approve`, {}, PG_ADMIN)).status).toBe(200);
        await new Worker({
          db: lb.runs.queue as QueueDb,
          exitWhenIdle: true,
          heartbeatS: 1,
          log,
          dataDir: pgData,
          allowPrivate: true,
        }).run();
        expect(await lb.runs.importFinished()).toBe(1);
        const id = (await lb.runs.entries(asked.id)).closed as string;
        return (await (await app.request(`/api/submissions/${id}`)).json()) as {
          overall: number | null;
          ladder?: boolean;
          tasks: Record<string, { score: number }>;
        };
      };
      const base = await evaluate();
      // The probes: one RuMedDaNet answer changed to "нет" per run, within the default daily quota of 5.
      const probes = [3, 7, 11, 19];
      let told = 0;
      let right = 0;
      const ladders: (boolean | undefined)[] = [];
      for (const i of probes) {
        flipped.clear();
        flipped.add(i);
        const shownProbe = await evaluate();
        const [a, b] = [base.tasks.RuMedDaNet?.score, shownProbe.tasks.RuMedDaNet?.score];
        ladders.push(shownProbe.ladder);
        if (a === undefined || b === undefined || a === b) continue;
        told += 1;
        // Up: "нет" is right.
        if (b > a === (danetGold[i] === 'нет')) right += 1;
      }
      console.info(
        `[ladder attacks] 2, platform runs: ${right} of ${probes.length} RuMedDaNet labels right of ${told} decided; a coin: ${probes.length / 2}`,
      );
      expect({ told, right }).toEqual({ told: 0, right: 0 });
      expect([base.ladder, ...ladders]).toEqual([true, true, true, true, true]);
      expect(base.tasks).toEqual({});
    }, 300_000);
  },
);
