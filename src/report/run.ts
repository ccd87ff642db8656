/**
 * `rumedbench report` as a function: build the report, then write the HTML file (or return the Markdown) and, with
 * `svgDir`, every chart as its own SVG file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { allCharts, buildReport, type Report, type ReportOptions } from './build.js';
import { renderCharts, renderReportHtml } from './html.js';
import { renderReportMarkdown } from './markdown.js';

export interface ReportRunOptions extends ReportOptions {
  format?: 'html' | 'markdown';
  /** Where the HTML goes; Markdown is returned (the CLI prints it) unless `out` is given. */
  out?: string;
  svgDir?: string;
}

export interface ReportRunResult {
  report: Report;
  /** The HTML or Markdown text. */
  text: string;
  /** Files written. */
  written: string[];
}

/**
 * @example const { written } = await runReport(['runs/a', 'runs/b'], { out: 'report.html', reference: true });
 */
export async function runReport(
  paths: readonly string[],
  options: ReportRunOptions = {},
): Promise<ReportRunResult> {
  const report = await buildReport(paths, options);
  const written: string[] = [];
  const format = options.format ?? 'html';
  let svgs: Map<string, string> | undefined;
  if (format === 'html' || options.svgDir) svgs = await renderCharts(report);
  if (options.svgDir && svgs) {
    mkdirSync(options.svgDir, { recursive: true });
    for (const c of allCharts(report)) {
      const file = join(options.svgDir, `${c.id}.svg`);
      writeFileSync(file, `<?xml version="1.0" encoding="UTF-8"?>\n${svgs.get(c.id) ?? ''}\n`);
      written.push(file);
    }
  }
  const text = format === 'html' ? await renderReportHtml(report, svgs) : renderReportMarkdown(report);
  const out = options.out ?? (format === 'html' ? 'report.html' : undefined);
  if (out) {
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, text);
    written.push(out);
  }
  return { report, text, written };
}
