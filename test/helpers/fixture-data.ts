/**
 * A small RuMedBench data folder that the tests write themselves, so that suites about plumbing (the server, the
 * LLM harness, the CLI) run without ../shared. Same files and record shapes as the real data (RuMedNLI's train file
 * missing, as in the mirror; RuMedTest with only its private test), a few records each, the same bytes every time.
 * Tests that reproduce the paper's numbers read the real data instead.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FixtureOptions {
  /** Records per test and private_test split (train has twice as many, dev half); 60 unless given. */
  n?: number;
}

const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;
/** A number that makes each record's text its own, across splits too (a prompt is looked up by its text). */
const MARK: Record<string, string> = { train: 'о', dev: 'д', test: 'т', private_test: 'з' };
const nth = (split: string, i: number) => `${i + 1}${MARK[split] ?? ''}`;
const id = (task: string, split: string, i: number, len = 8) =>
  createHash('sha256').update(`${task}/${split}/${i}`).digest('hex').slice(0, len);

const SYMPTOMS = [
  'Головная боль, повышение давления до 160/100, шум в ушах',
  'Кашель с мокротой, температура 38, слабость третий день',
  'Боль в эпигастрии после еды, изжога, тошнота',
  'Боль в пояснице, усиливается при наклоне, отдаёт в ногу',
  'Жажда, сухость во рту, частое мочеиспускание, похудание',
  'Жжение при мочеиспускании, учащённое мочеиспускание',
];
/**
 * The answer inventories: more than the 20 most likely tokens a top-k list gives (so that fallback's limits show),
 * with multi-word symptoms, as in the real files (105 codes and 141 symptoms there).
 */
export const FIXTURE_CODES: readonly string[] = Array.from(
  { length: 30 },
  (_, i) => `${'ABCDEFGHIJKLMN'[i % 14]}${10 + ((i * 7) % 90)}`,
);
export const FIXTURE_SYMPTOMS: readonly string[] = [
  ...[
    'головокружение',
    'одышка',
    'рвота',
    'онемение ноги',
    'кожный зуд',
    'боль внизу живота',
    'сухой кашель',
  ],
  ...['насморк', 'боль в горле', 'слабость', 'отёки ног', 'сердцебиение', 'изжога', 'запор', 'диарея'],
  ...['боль в суставах', 'бессонница', 'потливость', 'светобоязнь', 'шум в ушах', 'тремор рук', 'судороги'],
  ...['осиплость голоса', 'жажда', 'моча тёмного цвета'],
];
const CODES = FIXTURE_CODES;
const NEXT_SYMPTOMS = FIXTURE_SYMPTOMS;
const CONTEXTS = [
  'Парацетамол — анальгетик и антипиретик. Применяется при лихорадке и болевом синдроме.',
  'Амоксициллин — антибиотик группы пенициллинов широкого спектра действия.',
  'Метформин снижает уровень глюкозы в крови и применяется при сахарном диабете 2 типа.',
];
const QUESTIONS = ['Применяется ли препарат при лихорадке?', 'Является ли препарат антибиотиком?'];
const PREMISES = [
  'У пациента давление 120/80, пульс 72, жалоб нет.',
  'Пациент поступил с болью в груди и одышкой.',
  'В анамнезе сахарный диабет, принимает метформин.',
];
const HYPOTHESES = ['Пациент стабилен', 'У пациента острое состояние', 'Пациент получает лечение'];
const NLI = ['entailment', 'contradiction', 'neutral'] as const;
const NER_SENTENCES: [string, string][][] = [
  [
    ['Принимала', 'O'],
    ['Нурофен', 'B-Drugname'],
    ['от', 'O'],
    ['головной', 'B-DI'],
    ['боли', 'I-DI'],
    ['.', 'O'],
  ],
  [
    ['После', 'O'],
    ['таблеток', 'B-Drugform'],
    ['началась', 'O'],
    ['тошнота', 'B-ADR'],
    ['.', 'O'],
  ],
  [
    ['Антибиотики', 'B-Drugclass'],
    ['помогли', 'O'],
    ['при', 'O'],
    ['ангине', 'B-DI'],
    ['.', 'O'],
  ],
];
const EXAM = [
  {
    question: 'Нормальная частота дыхания у взрослого в покое',
    options: ['12–20 в минуту', '30–40', '5–8', '40–60'],
  },
  {
    question: 'Препарат выбора при анафилактическом шоке',
    options: ['фуросемид', 'адреналин', 'дигоксин', 'атропин'],
  },
];

type Maker = (split: string, i: number, gold: boolean) => Record<string, unknown>;

const TASK_FILES: Record<string, { splits: string[]; make: Maker }> = {
  RuMedTop3: {
    splits: ['train', 'dev', 'test'],
    make: (split, i) => ({
      idx: `q${id('top3', split, i, 7)}`,
      symptoms: `${pick(SYMPTOMS, i)}; день болезни ${nth(split, i)}`,
      code: pick(CODES, i),
    }),
  },
  RuMedSymptomRec: {
    splits: ['train', 'dev', 'test'],
    make: (split, i) => ({
      idx: `q${id('symptom', split, i, 7)}`,
      symptoms: `${pick(SYMPTOMS, i)}; день болезни ${nth(split, i)}`,
      code: pick(NEXT_SYMPTOMS, i),
    }),
  },
  RuMedDaNet: {
    splits: ['train', 'dev', 'test', 'private_test'],
    make: (split, i, gold) => ({
      pairID: id('danet', split, i, 32),
      context: `${pick(CONTEXTS, i)} Справка № ${nth(split, i)}.`,
      question: pick(QUESTIONS, i),
      ...(gold ? { answer: i % 2 === 0 ? 'да' : 'нет' } : {}),
    }),
  },
  RuMedNLI: {
    splits: ['dev', 'test', 'private_test'],
    make: (split, i, gold) => ({
      pairID: id('nli', split, i, 32),
      ru_sentence1: `${pick(PREMISES, i)} Койка ${nth(split, i)}.`,
      ru_sentence2: pick(HYPOTHESES, i + Math.floor(i / 3)),
      ...(gold ? { gold_label: pick(NLI, i) } : {}),
    }),
  },
  RuMedNER: {
    splits: ['train', 'dev', 'test'],
    make: (split, i) => {
      const s = pick(NER_SENTENCES, i);
      return {
        idx: `${id('ner', split, i, 7)}.tsv_0`,
        tokens: [...s.map(([w]) => w), 'День', nth(split, i), '.'],
        ner_tags: [...s.map(([, t]) => t), 'O', 'O', 'O'],
      };
    },
  },
  RuMedTest: {
    splits: ['private_test'],
    make: (split, i) => {
      const q = pick(EXAM, i);
      return {
        idx: id('test', split, i, 32),
        question: `${q.question} (вопрос ${nth(split, i)})`,
        ...Object.fromEntries(q.options.map((o, k) => [String(k + 1), o])),
      };
    },
  },
};

/** Writes the folder (`<Task>/<split>_v1.jsonl`); private tests carry no answers, as published. */
export function writeFixtureData(dir: string, options: FixtureOptions = {}): string {
  const n = options.n ?? 60;
  const sizes: Record<string, number> = { train: 2 * n, dev: Math.ceil(n / 2), test: n, private_test: n };
  for (const [task, spec] of Object.entries(TASK_FILES)) {
    mkdirSync(join(dir, task), { recursive: true });
    for (const split of spec.splits) {
      const lines = Array.from({ length: sizes[split] as number }, (_, i) =>
        JSON.stringify(spec.make(split, i, split !== 'private_test')),
      );
      writeFileSync(join(dir, task, `${split}_v1.jsonl`), `${lines.join('\n')}\n`);
    }
  }
  return dir;
}

let shared: string | undefined;
/** One fixture folder per test process, written on first use. */
export function fixtureDataDir(): string {
  shared ??= writeFixtureData(mkdtempSync(join(tmpdir(), 'rumedbench-fixture-data-')));
  return shared;
}

/**
 * Predictions for the fixture's test splits, in the RuMedBench format: the gold answer for every `every`-th record
 * and a wrong one for the rest, so that a test knows each score exactly.
 */
export function writeFixturePredictions(dataDir: string, out: string, every = 2): string {
  mkdirSync(out, { recursive: true });
  for (const [task, spec] of Object.entries(TASK_FILES)) {
    if (!spec.splits.includes('test')) continue;
    const lines: string[] = [];
    const n = readFileSync(join(dataDir, task, 'test_v1.jsonl'), 'utf8')
      .trim()
      .split('\n').length;
    for (let i = 0; i < n; i++) {
      const r = spec.make('test', i, true);
      const right = i % every === 0;
      lines.push(JSON.stringify(prediction(task, r, right)));
    }
    writeFileSync(join(out, `${task}.jsonl`), `${lines.join('\n')}\n`);
  }
  return out;
}

function prediction(task: string, r: Record<string, unknown>, right: boolean): Record<string, unknown> {
  switch (task) {
    case 'RuMedTop3':
    case 'RuMedSymptomRec': {
      const pool = task === 'RuMedTop3' ? CODES : NEXT_SYMPTOMS;
      const gold = r.code as string;
      const others = pool.filter((c) => c !== gold);
      return {
        idx: r.idx,
        code: gold,
        prediction: right ? [gold, ...others.slice(0, 2)] : others.slice(0, 3),
      };
    }
    case 'RuMedDaNet':
      return {
        pairID: r.pairID,
        answer: r.answer,
        prediction: right ? r.answer : r.answer === 'да' ? 'нет' : 'да',
      };
    case 'RuMedNLI':
      return {
        pairID: r.pairID,
        gold_label: r.gold_label,
        prediction: right ? r.gold_label : NLI[(NLI.indexOf(r.gold_label as (typeof NLI)[number]) + 1) % 3],
      };
    case 'RuMedNER':
      return {
        idx: r.idx,
        ner_tags: r.ner_tags,
        prediction: right ? r.ner_tags : (r.ner_tags as string[]).map(() => 'O'),
      };
    default:
      throw new Error(`no fixture predictions for ${task}`);
  }
}
