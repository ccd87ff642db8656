/**
 * The one renderer: a Vega-Lite spec to an SVG string, on the server side, with no DOM and no canvas (Vega's
 * headless view). Vega is imported on first use, so commands that draw nothing do not pay for loading it.
 */
import type { TopLevelSpec } from 'vega-lite';

type Engines = { vega: typeof import('vega'); vegaLite: typeof import('vega-lite') };
let engines: Promise<Engines> | undefined;
const load = (): Promise<Engines> => {
  engines ??= Promise.all([import('vega'), import('vega-lite')]).then(([vega, vegaLite]) => {
    measureTextWith(vega as unknown as { textMetrics: TextMetrics });
    return { vega, vegaLite };
  });
  return engines;
};

/** Vega's text measurer (not in its typings): `width` is what lays out labels and cuts them at their limit. */
interface TextMetrics {
  width: (item: { fontSize?: number; fontWeight?: string | number; limit?: number }, text: unknown) => number;
}

/**
 * Widths in ems of a sans-serif's characters, from DejaVu Sans (the widest of the fonts the pages name, and Linux's
 * usual fallback), so that a label never runs past the room made for it; Latin and Cyrillic alike.
 */
const EM: readonly [RegExp, number][] = [
  [/[ijlI.,:;'|!`]/, 0.3],
  [/\s/, 0.32],
  [/[ft()[\]{}\-r·]/, 0.4],
  [/[mwMWШЩЖЮЫФмшщжюыф]/, 0.9],
  [/[A-ZА-ЯЁ]/, 0.72],
  [/[0-9]/, 0.64],
];

/**
 * A text's width in pixels at a font size, as DejaVu Sans draws it, with 4% to spare (bold 16%): within a few percent
 * of Chromium's own measure of Latin and Cyrillic labels and titles. Vega without a canvas guesses 0.8 em per
 * character, a third more than real text: a long system name was cut at two thirds of its room (issue #45).
 */
export function textWidth(text: string, fontSize: number, bold = false): number {
  let em = 0;
  for (const ch of text) em += EM.find(([re]) => re.test(ch))?.[1] ?? 0.62;
  return em * fontSize * (bold ? 1.16 : 1.04);
}

function measureTextWith(vega: { textMetrics: TextMetrics }): void {
  vega.textMetrics.width = (item, text) => {
    const line = text === null || text === undefined ? '' : String(text).trim();
    const weight = item.fontWeight;
    const bold = weight === 'bold' || (typeof weight === 'number' && weight >= 600);
    const width = textWidth(line, item.fontSize ?? 11, bold);
    // Vega asks for the width as drawn: a text over its limit is cut to it (with an ellipsis).
    return item.limit && item.limit > 0 ? Math.min(width, item.limit) : width;
  };
}

/**
 * Draws a spec. The SVG's root gets `role="img"` and the given label, so a screen reader announces the chart as one
 * picture with its text alternative instead of reading every axis tick.
 */
export async function renderSvg(spec: TopLevelSpec, label: string): Promise<string> {
  const { vega, vegaLite } = await load();
  const compiled = vegaLite.compile(spec).spec;
  // No loader may reach the network: every chart carries its data inline.
  const loader = vega.loader({ mode: 'file' });
  loader.load = () => Promise.reject(new Error('charts carry their data inline; nothing is loaded'));
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', loader });
  try {
    const svg = await view.toSVG();
    return svg.replace(/^<svg /, `<svg role="img" aria-label="${escapeAttribute(label)}" `);
  } finally {
    view.finalize();
  }
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
