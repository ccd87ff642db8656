/**
 * The annotator's page script (served as /static/annotate.js; the page's CSP allows no inline script). Keyboard
 * first; every answer is saved the moment it is given, through a queue kept in localStorage, so that a reload, a
 * closed tab or a lost connection loses nothing: unsent answers are sent again, with backoff, and the page says so.
 */
import type { AnnotateAnswer, AnnotateData, AnnotatePost } from './annotate-data.js';

type Item = AnnotateData['items'][number];
interface Span {
  start: number;
  end: number;
  type: string;
}

function byId(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e;
}

const data = JSON.parse(byId('annotate-data').textContent ?? '') as AnnotateData;
const app = byId('app');
const statusEl = byId('save-status');
const progressEl = byId('progress');
const KEY = `rmb-pending-${data.token}`;
const api = `/api/annotate/${encodeURIComponent(data.token)}/answers`;
const { items, answers } = data;
const kind = data.campaign.kind;
let idx = 0;
let shownAt = Date.now();

// The ЙЦУКЕН letters by the physical key (KeyboardEvent.code) that carries them, so that Д and Н work on a Latin
// layout too.
const PHYSICAL_KEYS = [
  ...[
    'KeyQ',
    'KeyW',
    'KeyE',
    'KeyR',
    'KeyT',
    'KeyY',
    'KeyU',
    'KeyI',
    'KeyO',
    'KeyP',
    'BracketLeft',
    'BracketRight',
  ],
  ...['KeyA', 'KeyS', 'KeyD', 'KeyF', 'KeyG', 'KeyH', 'KeyJ', 'KeyK', 'KeyL', 'Semicolon', 'Quote'],
  ...['KeyZ', 'KeyX', 'KeyC', 'KeyV', 'KeyB', 'KeyN', 'KeyM', 'Comma', 'Period'],
];
const PHYSICAL = new Map(
  [...'йцукенгшщзхъфывапролджэячсмитьбю'].map((ch, i) => [PHYSICAL_KEYS[i] as string, ch]),
);

type Attrs = Record<string, string | null | undefined | ((e: Event) => void)>;

/** An element with attributes (`text` sets its text, `on…` adds a listener, null leaves the attribute out). */
function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  children: (Node | null)[] = [],
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.appendChild(c);
  return e;
}

// Saving: a queue in localStorage, sent in order; a failed send is retried with backoff.
class SaveError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}
function pending(): AnnotatePost[] {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? '[]') as AnnotatePost[];
  } catch {
    return [];
  }
}
function setPending(q: AnnotatePost[]): void {
  localStorage.setItem(KEY, JSON.stringify(q));
}
let sending = false;
let delay = 1000;
let timer: ReturnType<typeof setTimeout> | undefined;
function setStatus(text: string, cls = ''): void {
  statusEl.textContent = text;
  statusEl.className = `save-status ${cls}`;
}
function dropFirst(): void {
  const rest = pending();
  rest.shift();
  setPending(rest);
}
async function send(entry: AnnotatePost): Promise<void> {
  const res = await fetch(api, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(entry),
  });
  if (res.ok) return;
  const body = (await res.json().catch(() => ({}))) as { error?: string };
  throw new SaveError(body.error ?? String(res.status), res.status);
}
function flush(): void {
  if (sending) return;
  const first = pending()[0];
  if (!first) {
    setStatus('Все ответы сохранены', 'ok');
    return;
  }
  sending = true;
  setStatus('Сохранение…');
  send(first).then(
    () => {
      dropFirst();
      sending = false;
      delay = 1000;
      flush();
    },
    (e: unknown) => {
      sending = false;
      const status = e instanceof SaveError ? e.status : 0;
      const message = e instanceof Error ? e.message : String(e);
      if (status === 400) {
        // The server refused this answer for good: drop it and say why.
        dropFirst();
        setStatus(`Ответ не принят: ${message}`, 'error');
        return;
      }
      if (status === 401 || status === 403) {
        setStatus(`Ссылка больше не действует: ${message}`, 'error');
        return;
      }
      setStatus(`Не удалось сохранить ответ — повторим через ${Math.round(delay / 1000)} с`, 'error');
      clearTimeout(timer);
      timer = setTimeout(flush, delay);
      delay = Math.min(delay * 2, 30000);
    },
  );
}
window.addEventListener('online', () => {
  delay = 1000;
  flush();
});

function save(item: Item, answer: AnnotateAnswer | null, skipped: boolean): void {
  const now = Date.now();
  const entry: AnnotatePost = {
    item_id: item.id,
    answer: skipped ? null : answer,
    skipped,
    time_ms: now - shownAt,
  };
  shownAt = now;
  answers[item.id] = { answer: entry.answer, skipped: entry.skipped };
  const q = pending();
  q.push(entry);
  setPending(q);
  updateProgress();
  flush();
}

function answered(id: string): boolean {
  const a = answers[id];
  return a !== undefined && !a.skipped && a.answer !== null;
}
function updateProgress(): void {
  const n = items.filter((i) => answered(i.id)).length;
  progressEl.textContent = `отвечено ${n} из ${items.length}`;
}

function go(i: number): void {
  if (i < 0 || i >= items.length) return;
  idx = i;
  shownAt = Date.now();
  renderItem();
}
function next(): void {
  if (idx < items.length - 1) go(idx + 1);
  else renderDone();
}

function renderDone(): void {
  app.innerHTML = '';
  const left = items.filter((i) => !answered(i.id)).length;
  app.appendChild(
    el('div', { class: 'done' }, [
      el('h2', {
        text: left === 0 ? 'Все примеры размечены. Спасибо!' : `Конец списка. Без ответа осталось: ${left}`,
      }),
      el('button', { type: 'button', text: 'К первому примеру без ответа', onclick: () => go(firstOpen()) }),
    ]),
  );
}

/** The first item never seen, else the first without an answer, else the first. */
function firstOpen(): number {
  const unseen = items.findIndex((i) => !answers[i.id]);
  if (unseen >= 0) return unseen;
  return Math.max(
    0,
    items.findIndex((i) => !answered(i.id)),
  );
}

function navBar(item: Item): HTMLElement {
  const a = answers[item.id];
  const state = a ? (a.skipped ? 'пропущен' : 'есть ответ') : 'без ответа';
  return el('div', { class: 'item-nav' }, [
    el('span', { text: `Пример ${idx + 1} из ${items.length} · ${state}`, class: 'item-state' }),
    el('button', {
      type: 'button',
      text: '← Назад',
      onclick: () => go(idx - 1),
      disabled: idx === 0 ? 'disabled' : null,
    }),
    el('button', { type: 'button', text: 'Вперёд →', onclick: next }),
    el('button', {
      type: 'button',
      class: 'skip',
      text: 'Пропустить',
      onclick: () => {
        save(item, null, true);
        next();
      },
    }),
  ]);
}

// Label tasks: one button per label, keys 1..n (and Д/Н for yes/no).
function renderChoice(item: Item): HTMLElement {
  const current = answers[item.id]?.answer;
  const box = el('div', { class: 'choices', role: 'group', 'aria-label': 'Ответ' });
  for (const l of data.labels) {
    box.appendChild(
      el('button', {
        type: 'button',
        class: `choice${current === l.value ? ' chosen' : ''}`,
        'aria-pressed': current === l.value ? 'true' : 'false',
        'data-value': l.value,
        text: l.name === l.keys[0] ? l.name : `${l.keys.map((k) => k.toUpperCase()).join(' / ')} — ${l.name}`,
        onclick: () => choose(item, l.value),
      }),
    );
  }
  return box;
}
function choose(item: Item, value: string): void {
  save(item, value, false);
  renderItem();
}

// Ranked answers: type-ahead over the inventory, up to three, reorderable.
function renderRanking(item: Item): HTMLElement {
  const saved = answers[item.id]?.answer;
  const picks: string[] = Array.isArray(saved) ? [...saved] : [];
  const move = (from: number, to: number) => {
    picks.splice(to, 0, ...picks.splice(from, 1));
    commit();
  };
  const list = el('ol', { class: 'picks' });
  picks.forEach((p, i) => {
    list.appendChild(
      el('li', {}, [
        el('span', { text: p }),
        el('button', { type: 'button', title: 'выше', text: '↑', onclick: () => i > 0 && move(i, i - 1) }),
        el('button', {
          type: 'button',
          title: 'ниже',
          text: '↓',
          onclick: () => i < picks.length - 1 && move(i, i + 1),
        }),
        el('button', {
          type: 'button',
          title: 'убрать',
          text: '×',
          onclick: () => {
            picks.splice(i, 1);
            commit();
          },
        }),
      ]),
    );
  });
  function commit(): void {
    if (picks.length > 0) save(item, picks, false);
    else delete answers[item.id];
    renderItem();
    document.getElementById('search')?.focus();
  }
  const input = el('input', {
    id: 'search',
    type: 'search',
    autocomplete: 'off',
    placeholder: picks.length < 3 ? 'Начните вводить…' : 'Выбрано три',
    'aria-label': 'Поиск по списку',
  });
  if (picks.length >= 3) input.disabled = true;
  const sugg = el('ul', { class: 'suggestions', role: 'listbox' });
  let active = 0;
  let shown: string[] = [];
  const add = (v: string) => {
    if (picks.length < 3 && !picks.includes(v)) {
      picks.push(v);
      commit();
    }
  };
  input.addEventListener('input', () => {
    const qv = input.value.trim().toLowerCase();
    shown =
      qv === ''
        ? []
        : data.inventory.filter((v) => v.toLowerCase().includes(qv) && !picks.includes(v)).slice(0, 8);
    active = 0;
    sugg.innerHTML = '';
    shown.forEach((v, i) => {
      sugg.appendChild(
        el('li', {
          role: 'option',
          class: i === active ? 'active' : '',
          text: v,
          onmousedown: (e) => {
            e.preventDefault();
            add(v);
          },
        }),
      );
    });
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (shown.length === 0) return;
      active = (active + (e.key === 'ArrowDown' ? 1 : shown.length - 1)) % shown.length;
      [...sugg.children].forEach((li, i) => {
        li.className = i === active ? 'active' : '';
      });
    } else if (e.key === 'Enter') {
      e.preventDefault();
      e.stopPropagation();
      const choice = shown[active];
      if (choice !== undefined) add(choice);
      else if (picks.length > 0) next();
    }
  });
  setTimeout(() => {
    if (!input.disabled) input.focus();
  }, 0);
  return el('div', { class: 'ranking' }, [list, input, sugg]);
}

// Tagging: select words with the mouse or the keyboard, give the span a type; the answer is IOB2 tags.
function spansFrom(tags: AnnotateAnswer | null | undefined): Span[] {
  const spans: Span[] = [];
  let cur: Span | null = null;
  (Array.isArray(tags) ? tags : []).forEach((t, i) => {
    const prefix = t.slice(0, 2);
    if (prefix === 'B-' || (prefix === 'I-' && cur?.type !== t.slice(2))) {
      cur = { start: i, end: i, type: t.slice(2) };
      spans.push(cur);
    } else if (prefix === 'I-' && cur) cur.end = i;
    else cur = null;
  });
  return spans;
}
function tagsFrom(spans: Span[], n: number): string[] {
  const tags: string[] = Array.from({ length: n }, () => 'O');
  for (const s of spans)
    for (let i = s.start; i <= s.end; i++) tags[i] = `${i === s.start ? 'B-' : 'I-'}${s.type}`;
  return tags;
}
const sel = { anchor: 0, focus: 0 };
let dragging = false;
document.addEventListener('mouseup', () => {
  dragging = false;
});
function renderTagging(item: Item): HTMLElement {
  const tokens = item.tokens ?? [];
  const n = tokens.length;
  const spans = spansFrom(answers[item.id]?.answer);
  const lo = Math.min(sel.anchor, sel.focus);
  const hi = Math.max(sel.anchor, sel.focus);
  const box = el('div', {
    class: 'tokens',
    tabindex: '0',
    role: 'application',
    'aria-label': 'Текст отзыва: выделите слова',
  });
  tokens.forEach((t, i) => {
    const span = spans.find((s) => i >= s.start && i <= s.end);
    const cls = `tok${i >= lo && i <= hi ? ' selected' : ''}${span ? ` ent ent-${span.type}` : ''}${i === sel.focus ? ' cursor' : ''}`;
    const tok = el('span', { class: cls, 'data-i': String(i), text: t });
    if (span && i === span.start) tok.setAttribute('data-type', span.type);
    tok.addEventListener('mousedown', (e) => {
      e.preventDefault();
      if (e.shiftKey) sel.focus = i;
      else {
        sel.anchor = i;
        sel.focus = i;
      }
      dragging = true;
      paint();
      box.focus();
    });
    tok.addEventListener('mouseenter', () => {
      if (dragging) {
        sel.focus = i;
        paint();
      }
    });
    box.appendChild(tok);
    box.appendChild(document.createTextNode(' '));
  });
  function paint(): void {
    const a = Math.min(sel.anchor, sel.focus);
    const b = Math.max(sel.anchor, sel.focus);
    for (const t of box.querySelectorAll('.tok')) {
      const i = Number(t.getAttribute('data-i'));
      t.classList.toggle('selected', i >= a && i <= b);
      t.classList.toggle('cursor', i === sel.focus);
    }
  }
  function redraw(): void {
    renderItem();
    app.querySelector<HTMLElement>('.tokens')?.focus();
  }
  function commit(newSpans: Span[]): void {
    save(item, tagsFrom(newSpans, n), false);
    redraw();
  }
  function assign(type: string): void {
    const a = Math.min(sel.anchor, sel.focus);
    const b = Math.max(sel.anchor, sel.focus);
    const kept = spans.filter((s) => s.end < a || s.start > b);
    kept.push({ start: a, end: b, type });
    kept.sort((x, y) => x.start - y.start);
    commit(kept);
  }
  box.addEventListener('keydown', (e) => {
    const typeKey = /^[1-9]$/.test(e.key) ? data.entityTypes[Number(e.key) - 1] : undefined;
    if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      e.preventDefault();
      e.stopPropagation();
      sel.focus = Math.max(0, Math.min(n - 1, sel.focus + (e.key === 'ArrowRight' ? 1 : -1)));
      if (!e.shiftKey) sel.anchor = sel.focus;
      redraw();
    } else if (typeKey !== undefined) {
      e.preventDefault();
      e.stopPropagation();
      assign(typeKey);
    } else if (e.key === 'Delete' || e.key === 'Backspace') {
      e.preventDefault();
      e.stopPropagation();
      commit(spans.filter((s) => sel.focus < s.start || sel.focus > s.end));
    }
  });
  const types = el('div', { class: 'types', role: 'group', 'aria-label': 'Тип сущности' });
  data.entityTypes.forEach((t, k) => {
    types.appendChild(
      el('button', {
        type: 'button',
        class: `type ent-${t}`,
        'data-type': t,
        text: `${k + 1} ${t}`,
        onclick: () => assign(t),
      }),
    );
  });
  const list = el('ul', { class: 'spans' });
  for (const s of spans) {
    list.appendChild(
      el('li', {}, [
        el('span', {
          class: `ent-${s.type}`,
          text: `${s.type}: ${tokens.slice(s.start, s.end + 1).join(' ')}`,
        }),
        el('button', {
          type: 'button',
          title: 'убрать',
          text: '×',
          onclick: () => commit(spans.filter((x) => x !== s)),
        }),
      ]),
    );
  }
  const confirm = el('button', {
    type: 'button',
    class: 'confirm',
    text: spans.length ? 'Готово (Enter)' : 'Сущностей нет — готово (Enter)',
    onclick: () => {
      commit(spans);
      next();
    },
  });
  return el('div', { class: 'tagging' }, [box, types, list, confirm]);
}

function renderItem(): void {
  const item = items[idx];
  if (!item) return;
  app.innerHTML = '';
  app.appendChild(navBar(item));
  if (kind !== 'tagging') app.appendChild(el('div', { class: 'item-text', text: item.text }));
  if (kind === 'classification') app.appendChild(renderChoice(item));
  else if (kind === 'ranking') app.appendChild(renderRanking(item));
  else app.appendChild(renderTagging(item));
  updateProgress();
}

document.addEventListener('keydown', (e) => {
  if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target instanceof HTMLElement ? e.target : null;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA')) return;
  const item = items[idx];
  if (!item) return;
  if (e.key === 'ArrowLeft') {
    e.preventDefault();
    go(idx - 1);
    return;
  }
  if (e.key === 'ArrowRight') {
    e.preventDefault();
    next();
    return;
  }
  if (e.key === 'Enter' && t?.tagName !== 'BUTTON') {
    e.preventDefault();
    if (kind === 'tagging' && !answered(item.id)) save(item, tagsFrom([], item.tokens?.length ?? 0), false);
    next();
    return;
  }
  if (kind === 'classification') {
    const key = e.key.toLowerCase();
    const physical = PHYSICAL.get(e.code);
    const hit = data.labels.find((l) =>
      l.keys.some((k) => k.toLowerCase() === key || k.toLowerCase() === physical),
    );
    if (hit) {
      e.preventDefault();
      choose(item, hit.value);
    }
  }
});

idx = firstOpen();
renderItem();
flush();
