import { describe, expect, it } from 'vitest';
import {
  costChart,
  forestChart,
  paretoFront,
  rankingChart,
  SYSTEM_COLORS,
  scoreChart,
  slug,
} from './charts.js';
import { STRINGS } from './i18n.js';
import { renderSvg, textWidth } from './svg.js';

const t = STRINGS.en;
type Encoded = { encoding: { color: { scale: { domain: string[]; range: string[] } } } };
const colorScale = (spec: unknown, layer: number) =>
  ((spec as { layer: Encoded[] }).layer[layer] as Encoded).encoding.color.scale;

describe('charts', () => {
  it('keeps a system’s colour from the report’s order, whatever the chart shows', () => {
    const all = ['A', 'B', 'C'];
    const onlyC = scoreChart('RuMedNLI', [{ system: 'C', score: 50, ci: [45, 55] }], [], t, all);
    expect(colorScale(onlyC.spec, 1)).toEqual({ domain: ['C'], range: [SYSTEM_COLORS[2]] });
    const forest = forestChart(
      [
        { system: 'C', row: 'RuMedNLI accuracy', delta: 1, ci: [0, 2], p: 0.5 },
        { system: 'B', row: 'RuMedNLI accuracy', delta: -1, ci: null, p: 0.2 },
      ],
      ['B', 'C'],
      t,
      all,
    );
    expect(colorScale(forest.spec, 2)).toEqual({
      domain: ['B', 'C'],
      range: [SYSTEM_COLORS[1], SYSTEM_COLORS[2]],
    });
    expect(forest.table.rows).toEqual([
      ['C', 'RuMedNLI accuracy', '1.00', '[0.00, 2.00]', '0.500'],
      ['B', 'RuMedNLI accuracy', '-1.00', '–', '0.200'],
    ]);
  });

  it('colours "Which systems differ" by system, as every other chart, not by group letter (#45)', () => {
    const all = ['A', 'B', 'C'];
    // B and C share group b in one task and not in the next: a colour per letter gave C two colours.
    const points = [
      { system: 'B', row: 'RuMedNLI', score: 60, se: 1, rank_ci: [1, 2] as [number, number], group: 'a' },
      { system: 'C', row: 'RuMedNLI', score: 59, se: 1, rank_ci: [1, 2] as [number, number], group: 'a' },
      { system: 'B', row: 'RuMedNER', score: 80, se: 1, rank_ci: [1, 1] as [number, number], group: 'a' },
      { system: 'C', row: 'RuMedNER', score: 70, se: 1, rank_ci: [2, 2] as [number, number], group: 'b' },
    ];
    const chart = rankingChart(points, t, all);
    for (const layer of [0, 1, 2])
      expect(colorScale(chart.spec, layer)).toEqual({
        domain: ['B', 'C'],
        range: [SYSTEM_COLORS[1], SYSTEM_COLORS[2]],
      });
  });

  it('measures a label as DejaVu Sans draws it, a little wide, not at 0.8 em a character (#45)', () => {
    // Chromium's own measures at 11 px (DejaVu Sans): 225 and 488 px, where Vega's guess was 334 and 660.
    const ratios = [
      textWidth('Human annotators (crowd majority vote)', 11) / 225,
      textWidth('RuMedDaNet: матрица ошибок (строки — верная метка, столбцы — предсказанная)', 11) / 488,
    ];
    expect(ratios.map((r) => r >= 1 && r < 1.1)).toEqual([true, true]);
  });

  it('states its values in the text alternative and the table', () => {
    const c = scoreChart(
      'RuMedDaNet',
      [
        { system: 'x', score: 51.953, ci: [45.7, 58.2] },
        { system: 'y', score: 60, ci: null },
      ],
      [{ name: 'Naive (paper)', value: 50 }],
      t,
    );
    expect(c.id).toBe('score-rumeddanet');
    expect(c.description).toBe(
      'RuMedDaNet: score by system: x 51.95 [45.70, 58.20]; y 60.00 –; Naive (paper) 50.00.',
    );
    expect(c.table.rows).toEqual([
      ['x', '51.95', '[45.70, 58.20]'],
      ['y', '60.00', '–'],
      ['Naive (paper)', '50.00', '–'],
    ]);
  });

  it('draws to SVG without a DOM, escaping labels', async () => {
    const c = scoreChart('RuMedNLI', [{ system: '<b>&"', score: 40, ci: [30, 50] }], [], t);
    const svg = await renderSvg(c.spec, 'label "quoted" <b>');
    expect(svg.startsWith('<svg role="img" aria-label="label &quot;quoted&quot; &lt;b&gt;" ')).toBe(true);
    expect(svg).toContain('&lt;b&gt;&amp;');
    expect(svg).not.toContain('<b>');
  });

  it('finds the Pareto front of cost against score, and draws it', async () => {
    // b costs more than a and scores no better: dominated; d ties c's cost with a lower score: dominated.
    const points = [
      { system: 'a', cost: 1, score: 50 },
      { system: 'b', cost: 2, score: 50 },
      { system: 'c', cost: 3, score: 60 },
      { system: 'd', cost: 3, score: 55 },
      { system: 'e', cost: 10, score: 70 },
      { system: 'f', cost: 0.5, score: 40 },
    ];
    expect(paretoFront(points).map((p) => p.system)).toEqual(['f', 'a', 'c', 'e']);
    const c = costChart(
      points,
      t,
      points.map((p) => p.system),
    );
    expect(c.table.rows.map((r) => [r[0], r[3]])).toEqual([
      ['a', '✓'],
      ['b', ''],
      ['c', '✓'],
      ['d', ''],
      ['e', '✓'],
      ['f', '✓'],
    ]);
    const svg = await renderSvg(c.spec, c.description);
    // Six rings, four of them filled: the front's.
    expect(svg.match(/<path[^>]*aria-label="[a-f]: /g)?.length).toBe(10);
    expect(c.description).toContain('c: 60.00, $3.00 (on the Pareto front)');
  });

  it('makes file-name-safe ids', () => {
    expect(slug('RuMedSymptomRec')).toBe('rumedsymptomrec');
    expect(slug('../a b/ü')).toBe('a-b');
  });
});
