/**
 * IOB2 entity chunking exactly as `seqeval` 1.2.2 in its default mode (conlleval-style, IOB prefixes), which upstream
 * `code/eval.py` uses for RuMedNER. It lives with the tasks (RuMedNER's answers are read into tags through it) and the
 * metrics count entities with it, so the dependency runs one way: metrics → tasks.
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
 * A tag's prefix and type, split once per distinct tag: a test set has a few dozen tags over thousands of tokens,
 * and scoring chunks each sentence twice (its counts, its per-type breakdown).
 */
const parts = new Map<string, { tag: string; type: string }>();
function partsOf(chunk: string): { tag: string; type: string } {
  let p = parts.get(chunk);
  if (p === undefined) {
    p = { tag: prefixOf(chunk), type: typeOf(chunk) };
    // Bounded: hostile answers could carry any number of distinct tags.
    if (parts.size < 4096) parts.set(chunk, p);
  }
  return p;
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
    const { tag, type } = partsOf(chunk);
    if (endOfChunk(prevTag, tag, prevType, type)) entities.push({ type: prevType, start: begin, end: i - 1 });
    if (startOfChunk(prevTag, tag, prevType, type)) begin = i;
    prevTag = tag;
    prevType = type;
  }
  return entities;
}
