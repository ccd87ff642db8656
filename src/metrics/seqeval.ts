/**
 * Entity chunking and counts exactly as `seqeval` 1.2.2 in its default mode (conlleval-style, IOB prefixes),
 * which upstream `code/eval.py` uses for RuMedNER.
 *
 * seqeval flattens a list of sentences with an `O` between them before chunking, so an entity never crosses a
 * sentence boundary; chunking each sentence on its own, with an `O` after it, gives the same entities.
 * A tag's prefix is its first character and its type what follows the first `-` after it (`O` has type `_`).
 */

export interface Entity {
  readonly type: string;
  /** Inclusive token offsets. */
  readonly start: number;
  readonly end: number;
}

function prefixOf(tag: string): string {
  return tag.charAt(0);
}

function typeOf(tag: string): string {
  const rest = tag.slice(1);
  const dash = rest.indexOf('-');
  const type = dash < 0 ? rest : rest.slice(dash + 1);
  return type === '' ? '_' : type;
}

// seqeval's end_of_chunk: does the chunk that started before end before the current tag?
function endOfChunk(prevTag: string, tag: string, prevType: string, type: string): boolean {
  if (prevTag === 'E' || prevTag === 'S') return true;
  if ((prevTag === 'B' || prevTag === 'I') && (tag === 'B' || tag === 'S' || tag === 'O')) return true;
  return prevTag !== 'O' && prevTag !== '.' && prevType !== type;
}

// seqeval's start_of_chunk: does a chunk start at the current tag?
function startOfChunk(prevTag: string, tag: string, prevType: string, type: string): boolean {
  if (tag === 'B' || tag === 'S') return true;
  if ((prevTag === 'E' || prevTag === 'S' || prevTag === 'O') && (tag === 'E' || tag === 'I')) return true;
  return tag !== 'O' && tag !== '.' && prevType !== type;
}

/**
 * The entities of one tag sequence.
 * @example getEntities(['B-ADR', 'I-ADR', 'O', 'I-DI']) // ADR 0..1, DI 3..3
 */
export function getEntities(tags: readonly string[]): Entity[] {
  const entities: Entity[] = [];
  let prevTag = 'O';
  let prevType = '';
  let begin = 0;
  for (let i = 0; i <= tags.length; i++) {
    const chunk = i < tags.length ? (tags[i] as string) : 'O';
    const tag = prefixOf(chunk);
    const type = typeOf(chunk);
    if (endOfChunk(prevTag, tag, prevType, type)) entities.push({ type: prevType, start: begin, end: i - 1 });
    if (startOfChunk(prevTag, tag, prevType, type)) begin = i;
    prevTag = tag;
    prevType = type;
  }
  return entities;
}

export interface EntityCounts {
  /** Entities predicted with the right type and exact span. */
  tp: number;
  predicted: number;
  gold: number;
}

const key = (e: Entity): string => `${e.type}\u0000${e.start}\u0000${e.end}`;

/** Entity counts of one sentence, overall and per type. */
export function countEntities(
  gold: readonly string[],
  predicted: readonly string[],
): { total: EntityCounts; byType: Map<string, EntityCounts> } {
  const goldEntities = getEntities(gold);
  const predEntities = getEntities(predicted);
  const goldKeys = new Set(goldEntities.map(key));
  const byType = new Map<string, EntityCounts>();
  const bucket = (type: string): EntityCounts => {
    let c = byType.get(type);
    if (!c) {
      c = { tp: 0, predicted: 0, gold: 0 };
      byType.set(type, c);
    }
    return c;
  };
  const total: EntityCounts = { tp: 0, predicted: 0, gold: goldEntities.length };
  for (const e of goldEntities) bucket(e.type).gold += 1;
  // seqeval compares sets, so a repeated entity would count once; the chunker never repeats a span.
  for (const e of predEntities) {
    const b = bucket(e.type);
    b.predicted += 1;
    total.predicted += 1;
    if (goldKeys.has(key(e))) {
      b.tp += 1;
      total.tp += 1;
    }
  }
  return { total, byType };
}

/**
 * Precision, recall and F1 from counts, as seqeval computes them: a zero denominator gives 0 (its
 * `zero_division='warn'` default), and F1 = 2PR / (P + R), 0 where P + R = 0.
 */
export function prf(counts: EntityCounts): { precision: number; recall: number; f1: number } {
  const precision = counts.predicted === 0 ? 0 : counts.tp / counts.predicted;
  const recall = counts.gold === 0 ? 0 : counts.tp / counts.gold;
  const denom = precision + recall;
  return { precision, recall, f1: denom === 0 ? 0 : (2 * precision * recall) / denom };
}
