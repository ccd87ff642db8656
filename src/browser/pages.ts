/**
 * The server pages' own script (beside the report's, which sorts their tables): it warns before an upload over the
 * size cap is sent, and asks before a submission is deleted. Every page works without it.
 */
import './report.js';

for (const form of document.querySelectorAll<HTMLFormElement>('form[data-max-bytes]')) {
  const max = Number(form.getAttribute('data-max-bytes'));
  const input = form.querySelector<HTMLInputElement>('input[type=file]');
  const warn = form.querySelector<HTMLElement>('.size-warning');
  if (!input || !warn) continue;
  const check = (): boolean => {
    let total = 0;
    for (const f of input.files ?? []) total += f.size;
    const over = total > max;
    warn.hidden = !over;
    warn.textContent = over ? warn.getAttribute('data-text') : '';
    return !over;
  };
  input.addEventListener('change', check);
  form.addEventListener('submit', (e) => {
    if (!check()) e.preventDefault();
  });
}

for (const b of document.querySelectorAll<HTMLButtonElement>('button[data-action=delete]')) {
  b.addEventListener('click', (e) => {
    if (!window.confirm('Delete this submission?')) e.preventDefault();
  });
}
