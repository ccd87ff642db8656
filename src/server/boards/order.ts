/** A board's order, the one `rank` sorts by: what ./entries.ts sorts with and ./paging.ts's cursors name. */

/** Where an entry stands in a board's order: overall (higher first), tasks answered (more first), then age and id. */
export interface OrderKey {
  overall: number | null;
  tasks: number;
  created_at: string;
  id: string;
}

/** What the board's order reads of an entry (./entries.ts `Entry` has it). */
export interface Ordered {
  overall: number | null;
  tasks: Readonly<Record<string, unknown>>;
  created_at: string;
  id: string;
}

export const orderKey = (e: Ordered): OrderKey => ({
  overall: e.overall,
  tasks: Object.keys(e.tasks).length,
  created_at: e.created_at,
  id: e.id,
});

/** The board's order (the one `rank` sorts by): negative when `a` comes first. */
export function compareKeys(a: OrderKey, b: OrderKey): number {
  return (
    (b.overall ?? -1) - (a.overall ?? -1) ||
    b.tasks - a.tasks ||
    (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
