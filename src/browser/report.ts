/**
 * The report's script, inlined into the page. The page reads fully without it: it only sorts tables on a header
 * click, shows a chart mark's label on hover, and filters the list of answers. The server's pages load it too.
 */

document.documentElement.classList.add('js');

/** The number a cell starts with ("−0.5", "<0.001", "+3.2 [1.0, 5.1]"), or null for text. */
function leadingNumber(s: string): number | null {
  const m = s.replace(/\u2212/g, '-').match(/^[<+]?(-?\d+(?:\.\d+)?)/);
  return m?.[1] === undefined ? null : Number.parseFloat(m[1]);
}

for (const table of document.querySelectorAll<HTMLTableElement>('table.sortable')) {
  const heads = table.querySelectorAll<HTMLTableCellElement>('thead th');
  heads.forEach((th, col) => {
    th.setAttribute('aria-sort', 'none');
    th.tabIndex = 0;
    const sort = () => {
      const dir = th.getAttribute('aria-sort') === 'descending' ? 'ascending' : 'descending';
      for (const h of heads) h.setAttribute('aria-sort', 'none');
      th.setAttribute('aria-sort', dir);
      const body = table.tBodies[0];
      if (!body) return;
      const rows = [...body.rows];
      rows.sort((a, b) => {
        const x = a.cells[col]?.textContent ?? '';
        const y = b.cells[col]?.textContent ?? '';
        const nx = leadingNumber(x);
        const ny = leadingNumber(y);
        let r: number;
        if (nx !== null && ny !== null) r = nx - ny;
        else if (nx !== null) r = -1;
        else if (ny !== null) r = 1;
        else r = x.localeCompare(y);
        return dir === 'ascending' ? r : -r;
      });
      for (const r of rows) body.appendChild(r);
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') sort();
    });
  });
}

const tip = document.createElement('div');
tip.id = 'tip';
tip.hidden = true;
document.body.appendChild(tip);
for (const mark of document.querySelectorAll<SVGElement>('.chart g.role-mark [aria-label]')) {
  mark.addEventListener('mousemove', (e) => {
    tip.textContent = mark.getAttribute('aria-label');
    tip.hidden = false;
    tip.style.left = `${e.clientX + 12}px`;
    tip.style.top = `${e.clientY + 12}px`;
  });
  mark.addEventListener('mouseleave', () => {
    tip.hidden = true;
  });
}

const filter = document.getElementById('sample-filter');
if (filter instanceof HTMLInputElement) {
  const row = filter.closest<HTMLElement>('.filter-row');
  if (row) row.hidden = false;
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    for (const d of document.querySelectorAll<HTMLDetailsElement>('details.sample'))
      d.hidden = q !== '' && !(d.textContent ?? '').toLowerCase().includes(q);
    if (q !== '')
      for (const d of document.querySelectorAll<HTMLDetailsElement>('details.failures')) d.open = true;
  });
}
