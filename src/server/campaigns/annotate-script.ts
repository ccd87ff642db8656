/**
 * The annotator's page script (served as /static/annotate.js; the page's CSP allows no inline script). Keyboard
 * first; every answer is saved the moment it is given, through a queue kept in localStorage, so that a reload, a
 * closed tab or a lost connection loses nothing: unsent answers are sent again, with backoff, and the page says so.
 */
export const ANNOTATE_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('annotate-data').textContent);
  var app = document.getElementById('app');
  var statusEl = document.getElementById('save-status');
  var progressEl = document.getElementById('progress');
  var KEY = 'rmb-pending-' + data.token;
  var api = '/api/annotate/' + encodeURIComponent(data.token) + '/answers';
  var items = data.items;
  var answers = data.answers; // id -> {answer, skipped}
  var kind = data.campaign.kind;
  var idx = 0;
  var shownAt = Date.now();
  // The ЙЦУКЕН letters by the physical key (KeyboardEvent.code) that carries them.
  var PHYSICAL = {};
  'йцукенгшщзхъфывапролджэячсмитьбю'.split('').forEach(function (ch, i) {
    PHYSICAL[['KeyQ','KeyW','KeyE','KeyR','KeyT','KeyY','KeyU','KeyI','KeyO','KeyP','BracketLeft','BracketRight',
      'KeyA','KeyS','KeyD','KeyF','KeyG','KeyH','KeyJ','KeyK','KeyL','Semicolon','Quote',
      'KeyZ','KeyX','KeyC','KeyV','KeyB','KeyN','KeyM','Comma','Period'][i]] = ch;
  });

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (attrs[k] === null || attrs[k] === undefined) return;
      if (k === 'text') e.textContent = attrs[k];
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }

  // Saving: a queue in localStorage, sent in order; a failed send is retried with backoff.
  function pending() { try { return JSON.parse(localStorage.getItem(KEY) || '[]'); } catch (e) { return []; } }
  function setPending(q) { localStorage.setItem(KEY, JSON.stringify(q)); }
  var sending = false, delay = 1000, timer = null;
  function setStatus(text, cls) { statusEl.textContent = text; statusEl.className = 'save-status ' + (cls || ''); }
  function flush() {
    if (sending) return;
    var q = pending();
    if (q.length === 0) { setStatus('Все ответы сохранены', 'ok'); return; }
    sending = true;
    setStatus('Сохранение…', '');
    fetch(api, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(q[0]) })
      .then(function (res) {
        if (res.ok) return null;
        return res.json().then(function (b) { throw Object.assign(new Error(b.error || res.status), { status: res.status }); });
      })
      .then(function () {
        var rest = pending();
        rest.shift();
        setPending(rest);
        sending = false;
        delay = 1000;
        flush();
      })
      .catch(function (e) {
        sending = false;
        if (e.status === 400) {
          // The server refused this answer for good: drop it and say why.
          var rest = pending(); rest.shift(); setPending(rest);
          setStatus('Ответ не принят: ' + e.message, 'error');
          return;
        }
        if (e.status === 401 || e.status === 403) { setStatus('Ссылка больше не действует: ' + e.message, 'error'); return; }
        setStatus('Не удалось сохранить ответ — повторим через ' + Math.round(delay / 1000) + ' с', 'error');
        clearTimeout(timer);
        timer = setTimeout(flush, delay);
        delay = Math.min(delay * 2, 30000);
      });
  }
  window.addEventListener('online', function () { delay = 1000; flush(); });

  function save(item, answer, skipped) {
    var now = Date.now();
    var entry = { item_id: item.id, answer: skipped ? null : answer, skipped: !!skipped, time_ms: now - shownAt };
    shownAt = now;
    answers[item.id] = { answer: entry.answer, skipped: entry.skipped };
    var q = pending();
    q.push(entry);
    setPending(q);
    updateProgress();
    flush();
  }

  function answered(id) { var a = answers[id]; return a && !a.skipped && a.answer !== null; }
  function updateProgress() {
    var n = items.filter(function (i) { return answered(i.id); }).length;
    progressEl.textContent = 'отвечено ' + n + ' из ' + items.length;
  }

  function go(i) {
    if (i < 0 || i >= items.length) return;
    idx = i;
    shownAt = Date.now();
    renderItem();
  }
  function next() {
    if (idx < items.length - 1) go(idx + 1);
    else renderDone();
  }

  function renderDone() {
    app.innerHTML = '';
    var left = items.filter(function (i) { return !answered(i.id); }).length;
    app.appendChild(el('div', { class: 'done' }, [
      el('h2', { text: left === 0 ? 'Все примеры размечены. Спасибо!' : 'Конец списка. Без ответа осталось: ' + left }),
      el('button', { type: 'button', text: 'К первому примеру без ответа', onclick: function () { go(firstOpen()); } }),
    ]));
  }

  function firstOpen() {
    for (var i = 0; i < items.length; i++) if (!answers[items[i].id]) return i;
    for (i = 0; i < items.length; i++) if (!answered(items[i].id)) return i;
    return 0;
  }

  function navBar(item) {
    var a = answers[item.id];
    var state = a ? (a.skipped ? 'пропущен' : 'есть ответ') : 'без ответа';
    return el('div', { class: 'item-nav' }, [
      el('span', { text: 'Пример ' + (idx + 1) + ' из ' + items.length + ' · ' + state, class: 'item-state' }),
      el('button', { type: 'button', text: '← Назад', onclick: function () { go(idx - 1); }, disabled: idx === 0 ? 'disabled' : null }),
      el('button', { type: 'button', text: 'Вперёд →', onclick: next }),
      el('button', { type: 'button', class: 'skip', text: 'Пропустить', onclick: function () { save(item, null, true); next(); } }),
    ]);
  }

  // Label tasks: one button per label, keys 1..n (and Д/Н for yes/no).
  function renderChoice(item) {
    var current = answers[item.id] && answers[item.id].answer;
    var box = el('div', { class: 'choices', role: 'group', 'aria-label': 'Ответ' });
    data.labels.forEach(function (l) {
      box.appendChild(el('button', {
        type: 'button',
        class: 'choice' + (current === l.value ? ' chosen' : ''),
        'aria-pressed': current === l.value ? 'true' : 'false',
        'data-value': l.value,
        text: l.name === l.keys[0] ? l.name : l.keys.map(function (k) { return k.toUpperCase(); }).join(' / ') + ' — ' + l.name,
        onclick: function () { choose(item, l.value); },
      }));
    });
    return box;
  }
  function choose(item, value) { save(item, value, false); renderItem(); }

  // Ranked answers: type-ahead over the inventory, up to three, reorderable.
  function renderRanking(item) {
    var picks = (answers[item.id] && answers[item.id].answer) ? answers[item.id].answer.slice() : [];
    var wrap = el('div', { class: 'ranking' });
    var list = el('ol', { class: 'picks' });
    picks.forEach(function (p, i) {
      list.appendChild(el('li', {}, [
        el('span', { text: p }),
        el('button', { type: 'button', title: 'выше', text: '↑', onclick: function () { if (i > 0) { picks.splice(i - 1, 0, picks.splice(i, 1)[0]); commit(); } } }),
        el('button', { type: 'button', title: 'ниже', text: '↓', onclick: function () { if (i < picks.length - 1) { picks.splice(i + 1, 0, picks.splice(i, 1)[0]); commit(); } } }),
        el('button', { type: 'button', title: 'убрать', text: '×', onclick: function () { picks.splice(i, 1); commit(); } }),
      ]));
    });
    function commit() {
      if (picks.length > 0) save(item, picks, false);
      else { answers[item.id] = undefined; delete answers[item.id]; }
      renderItem();
      var again = document.getElementById('search');
      if (again) again.focus();
    }
    var input = el('input', { id: 'search', type: 'search', autocomplete: 'off', placeholder: picks.length < 3 ? 'Начните вводить…' : 'Выбрано три', 'aria-label': 'Поиск по списку' });
    if (picks.length >= 3) input.disabled = true;
    var sugg = el('ul', { class: 'suggestions', role: 'listbox' });
    var active = 0, shown = [];
    function refresh() {
      var qv = input.value.trim().toLowerCase();
      shown = qv === '' ? [] : data.inventory.filter(function (v) { return v.toLowerCase().indexOf(qv) >= 0 && picks.indexOf(v) < 0; }).slice(0, 8);
      active = 0;
      sugg.innerHTML = '';
      shown.forEach(function (v, i) {
        sugg.appendChild(el('li', { role: 'option', class: i === active ? 'active' : '', text: v, onmousedown: function (e) { e.preventDefault(); add(v); } }));
      });
    }
    function add(v) { if (picks.length < 3 && picks.indexOf(v) < 0) { picks.push(v); commit(); } }
    input.addEventListener('input', refresh);
    input.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        if (shown.length === 0) return;
        active = (active + (e.key === 'ArrowDown' ? 1 : shown.length - 1)) % shown.length;
        Array.prototype.forEach.call(sugg.children, function (li, i) { li.className = i === active ? 'active' : ''; });
      } else if (e.key === 'Enter') {
        e.preventDefault();
        e.stopPropagation();
        if (shown.length > 0) add(shown[active]);
        else if (picks.length > 0) next();
      }
    });
    wrap.appendChild(list);
    wrap.appendChild(input);
    wrap.appendChild(sugg);
    setTimeout(function () { if (!input.disabled) input.focus(); }, 0);
    return wrap;
  }

  // Tagging: select words with the mouse or the keyboard, give the span a type; the answer is IOB2 tags.
  function spansFrom(tags) {
    var spans = [], cur = null;
    (tags || []).forEach(function (t, i) {
      if (t.slice(0, 2) === 'B-' || (t.slice(0, 2) === 'I-' && (!cur || cur.type !== t.slice(2)))) {
        cur = { start: i, end: i, type: t.slice(2) }; spans.push(cur);
      } else if (t.slice(0, 2) === 'I-' && cur) cur.end = i;
      else cur = null;
    });
    return spans;
  }
  function tagsFrom(spans, n) {
    var tags = []; for (var i = 0; i < n; i++) tags.push('O');
    spans.forEach(function (s) { for (var i = s.start; i <= s.end; i++) tags[i] = (i === s.start ? 'B-' : 'I-') + s.type; });
    return tags;
  }
  var sel = { anchor: 0, focus: 0 };
  var dragging = false;
  document.addEventListener('mouseup', function () { dragging = false; });
  function renderTagging(item) {
    var n = item.tokens.length;
    var spans = spansFrom(answers[item.id] && answers[item.id].answer);
    var lo = Math.min(sel.anchor, sel.focus), hi = Math.max(sel.anchor, sel.focus);
    var box = el('div', { class: 'tokens', tabindex: '0', role: 'application', 'aria-label': 'Текст отзыва: выделите слова' });
    item.tokens.forEach(function (t, i) {
      var span = spans.filter(function (s) { return i >= s.start && i <= s.end; })[0];
      var cls = 'tok' + (i >= lo && i <= hi ? ' selected' : '') + (span ? ' ent ent-' + span.type : '') + (i === sel.focus ? ' cursor' : '');
      var tok = el('span', { class: cls, 'data-i': String(i), text: t });
      if (span && i === span.start) tok.setAttribute('data-type', span.type);
      tok.addEventListener('mousedown', function (e) {
        e.preventDefault();
        if (e.shiftKey) sel.focus = i; else { sel.anchor = i; sel.focus = i; }
        dragging = true; paint(); box.focus();
      });
      tok.addEventListener('mouseenter', function () { if (dragging) { sel.focus = i; paint(); } });
      box.appendChild(tok);
      box.appendChild(document.createTextNode(' '));
    });
    function paint() {
      var a = Math.min(sel.anchor, sel.focus), b = Math.max(sel.anchor, sel.focus);
      Array.prototype.forEach.call(box.querySelectorAll('.tok'), function (t) {
        var i = Number(t.getAttribute('data-i'));
        t.classList.toggle('selected', i >= a && i <= b);
        t.classList.toggle('cursor', i === sel.focus);
      });
    }
    function redraw() { renderItem(); var b = app.querySelector('.tokens'); if (b) b.focus(); }
    function commit(newSpans) { save(item, tagsFrom(newSpans, n), false); redraw(); }
    function assign(type) {
      var a = Math.min(sel.anchor, sel.focus), b = Math.max(sel.anchor, sel.focus);
      var kept = spans.filter(function (s) { return s.end < a || s.start > b; });
      kept.push({ start: a, end: b, type: type });
      kept.sort(function (x, y) { return x.start - y.start; });
      commit(kept);
    }
    box.addEventListener('keydown', function (e) {
      if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
        e.preventDefault(); e.stopPropagation();
        sel.focus = Math.max(0, Math.min(n - 1, sel.focus + (e.key === 'ArrowRight' ? 1 : -1)));
        if (!e.shiftKey) sel.anchor = sel.focus;
        redraw();
      } else if (/^[1-9]$/.test(e.key) && Number(e.key) <= data.entityTypes.length) {
        e.preventDefault(); e.stopPropagation();
        assign(data.entityTypes[Number(e.key) - 1]);
      } else if (e.key === 'Delete' || e.key === 'Backspace') {
        e.preventDefault(); e.stopPropagation();
        commit(spans.filter(function (s) { return sel.focus < s.start || sel.focus > s.end; }));
      }
    });
    var types = el('div', { class: 'types', role: 'group', 'aria-label': 'Тип сущности' });
    data.entityTypes.forEach(function (t, k) {
      types.appendChild(el('button', { type: 'button', class: 'type ent-' + t, 'data-type': t, text: (k + 1) + ' ' + t, onclick: function () { assign(t); } }));
    });
    var list = el('ul', { class: 'spans' });
    spans.forEach(function (s) {
      list.appendChild(el('li', {}, [
        el('span', { class: 'ent-' + s.type, text: s.type + ': ' + item.tokens.slice(s.start, s.end + 1).join(' ') }),
        el('button', { type: 'button', title: 'убрать', text: '×', onclick: function () { commit(spans.filter(function (x) { return x !== s; })); } }),
      ]));
    });
    var confirm = el('button', { type: 'button', class: 'confirm', text: spans.length ? 'Готово (Enter)' : 'Сущностей нет — готово (Enter)', onclick: function () { commit(spans); next(); } });
    return el('div', { class: 'tagging' }, [box, types, list, confirm]);
  }

  function renderItem() {
    var item = items[idx];
    app.innerHTML = '';
    app.appendChild(navBar(item));
    if (kind !== 'tagging') app.appendChild(el('div', { class: 'item-text', text: item.text }));
    if (kind === 'classification') app.appendChild(renderChoice(item));
    else if (kind === 'ranking') app.appendChild(renderRanking(item));
    else app.appendChild(renderTagging(item));
    updateProgress();
  }

  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    var typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA');
    if (typing) return;
    var item = items[idx];
    if (!item) return;
    if (e.key === 'ArrowLeft') { e.preventDefault(); go(idx - 1); return; }
    if (e.key === 'ArrowRight') { e.preventDefault(); next(); return; }
    if (e.key === 'Enter' && !(t && t.tagName === 'BUTTON')) {
      e.preventDefault();
      if (kind === 'tagging') { if (!answered(item.id)) save(item, tagsFrom(spansFrom(null), item.tokens.length), false); }
      next();
      return;
    }
    if (kind === 'classification') {
      var key = e.key.toLowerCase();
      // Д and Н work on a Latin layout too: the keys where the Russian layout has them.
      var physical = PHYSICAL[e.code];
      var hit = data.labels.filter(function (l) {
        return l.keys.some(function (k) { k = k.toLowerCase(); return k === key || k === physical; });
      })[0];
      if (hit) { e.preventDefault(); choose(item, hit.value); }
    }
  });

  idx = firstOpen();
  renderItem();
  flush();
})();
`;
