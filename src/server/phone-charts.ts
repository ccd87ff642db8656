/**
 * A phone's drawing of a chart: the same spec (the report's one definition of each chart), laid out for a narrow box.
 * A chart drawn for a wide page and shrunk to a phone's 366 px would print its text at 4-6 px; one drawn wide and
 * scrolled sideways hides its own points (issue #63). So a phone gets a second drawing, no wider than its box: the
 * plot takes the width the labels leave, the title and the legend wrap, facets stack one above the other.
 */
import type { TopLevelSpec } from 'vega-lite';
import { renderSvg, textWidth } from '../report/svg.js';

/** The widest chart a phone's page shows whole: 390 px, less the page's margins (0.75 rem each side). */
export const PHONE_CHART_PX = 366;

/** The longest axis label a phone's chart prints whole (longer ones end in "…"; the table below has them whole). */
const PHONE_LABEL_PX = 130;
/** A legend's symbol and the gaps around it, beside each label. */
const LEGEND_ENTRY_PAD = 30;
const TITLE_FONT = 13;
/** Vega's padding around a view, on each side (its default). */
const VIEW_PAD = 5;
const LEGEND_FONT = 10;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A text broken at its spaces into lines no wider than `width` at a font size (a word wider than that, alone). */
export function wrapText(text: string, width: number, fontSize: number, bold = false): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (line && textWidth(next, fontSize, bold) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

/** The values a nominal colour legend lists: its scale's domain (the report's charts give it whole). */
function legendLabels(spec: unknown): string[] {
  const out: string[] = [];
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) visit(x);
    else if (isObject(v)) {
      const color = isObject(v.encoding) ? v.encoding.color : undefined;
      if (
        isObject(color) &&
        color.legend !== null &&
        isObject(color.scale) &&
        Array.isArray(color.scale.domain)
      )
        for (const d of color.scale.domain) if (typeof d === 'string' && !out.includes(d)) out.push(d);
      for (const x of Object.values(v)) visit(x);
    }
  };
  visit(spec);
  return out;
}

/**
 * Every axis's label limit (the config's and those a chart sets on one axis) cut to what a phone has room for; a
 * category axis's level labels along x slanted, so that long names ("contradiction") do not print over each other.
 */
function capAxisLabels(v: unknown, channel = ''): void {
  if (Array.isArray(v)) for (const x of v) capAxisLabels(x);
  else if (isObject(v)) {
    for (const [k, x] of Object.entries(v))
      if (k === 'axis' && isObject(x)) {
        if (typeof x.labelLimit === 'number') x.labelLimit = Math.min(x.labelLimit, PHONE_LABEL_PX);
        if (channel === 'x' && v.type === 'nominal' && x.labelAngle === 0) x.labelAngle = -40;
      } else capAxisLabels(x, k);
  }
}

/**
 * The phone's spec of a chart, its plot `plotWidth` wide where it is faceted (a single view is fitted to `width`
 * whole by Vega itself). Pure: the spec given is not changed.
 */
export function phoneSpec(spec: TopLevelSpec, width: number, plotWidth?: number): TopLevelSpec {
  const s = structuredClone(spec) as unknown as Json;
  capAxisLabels(s);
  // The room inside Vega's padding (a pixel spare for the measure's rounding).
  const room = width - 2 * VIEW_PAD - 1;
  const config = isObject(s.config) ? s.config : {};
  s.config = config;
  config.axis = { ...(isObject(config.axis) ? config.axis : {}), labelLimit: PHONE_LABEL_PX };
  // A legend wraps into as many columns as the widest label leaves room for.
  const labels = legendLabels(s);
  const widest = Math.min(
    room - LEGEND_ENTRY_PAD,
    Math.max(0, ...labels.map((l) => textWidth(l, LEGEND_FONT))),
  );
  config.legend = {
    ...(isObject(config.legend) ? config.legend : {}),
    orient: 'bottom',
    direction: 'horizontal',
    columns: Math.max(1, Math.floor(room / (widest + LEGEND_ENTRY_PAD))),
    labelLimit: widest,
    labelFontSize: LEGEND_FONT,
  };
  if (typeof s.title === 'string') s.title = wrapText(s.title, room, TITLE_FONT, true);
  if (isObject(s.facet)) {
    // Panels side by side do not fit a phone: they stand one above the other, each named above itself.
    const facet = s.facet;
    if (facet.column) {
      facet.row = facet.column;
      delete facet.column;
    }
    config.header = {
      ...(isObject(config.header) ? config.header : {}),
      labelAngle: 0,
      labelOrient: 'top',
      labelAnchor: 'start',
      labelAlign: 'left',
      // A panel's name starts above its plot, right of the axis's labels: it has the room they leave.
      labelLimit: Math.round(room * 0.55),
    };
    const inner = isObject(s.spec) ? s.spec : {};
    inner.width = Math.max(60, Math.round(plotWidth ?? width / 2));
  } else s.width = Math.max(60, Math.round(plotWidth ?? width / 2));
  return s as unknown as TopLevelSpec;
}

/** The width an SVG was drawn at (its root's `width`). */
export const svgWidth = (svg: string): number => Number(/^<svg[^>]*?\swidth="([\d.]+)"/.exec(svg)?.[1] ?? 0);

/**
 * A chart drawn for a wide page and, where that is wider than a phone's box, for a phone: `phone` is '' where the
 * wide drawing fits. A faceted chart's panels are sized by a first drawing's measure (Vega fits only single views).
 */
export async function drawForPhone(
  spec: TopLevelSpec,
  label: string,
  width = PHONE_CHART_PX,
): Promise<{ wide: string; phone: string }> {
  const wide = await renderSvg(spec, label);
  if (svgWidth(wide) <= width) return { wide, phone: '' };
  // The drawing's width grows with its plot's in a straight line (labels and titles keep theirs; a reference level's
  // label at 85 % of the axis moves with it): two drawings measure the line, a third stands on it, a fourth corrects
  // what a label cut shorter moved.
  const draw = async (plot: number) => {
    const svg = await renderSvg(phoneSpec(spec, width, plot), label);
    return { plot, svg, w: svgWidth(svg) };
  };
  let a = await draw(Math.round(width / 2));
  let b = await draw(Math.max(40, a.plot + width - a.w));
  for (let i = 0; i < 2 && b.w !== width && b.plot !== a.plot; i++) {
    const slope = Math.max(0.2, (b.w - a.w) / (b.plot - a.plot));
    const next = await draw(Math.max(40, Math.floor(b.plot + (width - b.w) / slope)));
    [a, b] = [b, next];
  }
  const phone = b.w <= width || a.w > width ? b.svg : a.svg;
  return { wide, phone };
}
