/** Reading HTML as a browser does (parse5, the WHATWG parser), for assertions on what a page really contains. */
import { type DefaultTreeAdapterMap, parse } from 'parse5';

export type Node = DefaultTreeAdapterMap['node'];
export type Element = DefaultTreeAdapterMap['element'];

export const parseHtml = (html: string): Node => parse(html) as Node;

const isElement = (n: Node): n is Element => 'tagName' in n;
const childrenOf = (n: Node): Node[] => {
  const kids = 'childNodes' in n ? (n.childNodes as Node[]) : [];
  // <template> keeps its children in `content`.
  const content = (n as { content?: Node }).content;
  return content && 'childNodes' in content ? [...kids, ...(content.childNodes as Node[])] : kids;
};

/** Every element below `root` (depth first) that passes `test`. */
export function elements(root: Node, test: (e: Element) => boolean = () => true): Element[] {
  const out: Element[] = [];
  const walk = (n: Node): void => {
    if (isElement(n) && test(n)) out.push(n);
    for (const c of childrenOf(n)) walk(c);
  };
  walk(root);
  return out;
}

export const attr = (e: Element, name: string): string | undefined =>
  e.attrs.find((a) => a.name === name)?.value;

const hasClass = (e: Element, cls: string): boolean => (attr(e, 'class') ?? '').split(/\s+/).includes(cls);

export const byId = (root: Node, id: string): Element | undefined =>
  elements(root, (e) => attr(e, 'id') === id)[0];

/** The text a reader sees (text nodes joined). */
export function textOf(n: Node): string {
  if (n.nodeName === '#text') return (n as { value: string }).value;
  return childrenOf(n).map(textOf).join('');
}

/** How many items a Vega mark layer named `name` drew inside `root`: the children of its `<name>_marks` groups. */
export function markCount(root: Node, name: string): number {
  return elements(root, (e) => e.tagName === 'g' && hasClass(e, `${name}_marks`)).reduce(
    (n, g) => n + g.childNodes.filter(isElement).length,
    0,
  );
}

/** Rows of a table as text cells. */
export function tableRows(table: Element): string[][] {
  return elements(table, (e) => e.tagName === 'tr').map((tr) =>
    tr.childNodes.filter(isElement).map((c) => textOf(c).trim()),
  );
}
