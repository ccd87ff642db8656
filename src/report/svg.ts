/**
 * The one renderer: a Vega-Lite spec to an SVG string, on the server side, with no DOM and no canvas (Vega's
 * headless view). Vega is imported on first use, so commands that draw nothing do not pay for loading it.
 */
import type { TopLevelSpec } from 'vega-lite';

type Engines = { vega: typeof import('vega'); vegaLite: typeof import('vega-lite') };
let engines: Promise<Engines> | undefined;
const load = (): Promise<Engines> => {
  engines ??= Promise.all([import('vega'), import('vega-lite')]).then(([vega, vegaLite]) => ({
    vega,
    vegaLite,
  }));
  return engines;
};

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
