/** Plain-text tables for the terminal, shared by every room that prints one (the CLI, the LLM harness's variant tables, reports). */

/** Left-aligns the first column and right-aligns the others (numbers), unless `leftColumns` says otherwise. */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  leftColumns = 1,
): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) =>
        c < leftColumns ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number),
      )
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
