/**
 * What the annotator's page embeds for its script (`<script type="application/json" id="annotate-data">`): the
 * server builds it, annotate.ts reads it. Types only, so that both sides are checked against one shape.
 */

export type AnnotateAnswer = string | string[];

export interface AnnotateData {
  token: string;
  campaign: {
    id: string;
    name: string;
    task: string;
    kind: 'classification' | 'ranking' | 'tagging';
    guidelines: string;
  };
  /** The annotator's number (1, 2, …). */
  annotator: number;
  /** Classification: a button per label, with the keys that choose it. */
  labels: { value: string; name: string; keys: string[] }[];
  /** Ranking: the inventory to choose from. */
  inventory: string[];
  /** Tagging: the entity types, keys 1..n. */
  entityTypes: string[];
  items: { id: string; text: string; tokens?: string[] }[];
  answers: Record<string, { answer: AnnotateAnswer | null; skipped: boolean }>;
}

/** One answer as the page posts it to /api/annotate/<token>/answers. */
export interface AnnotatePost {
  item_id: string;
  answer: AnnotateAnswer | null;
  skipped: boolean;
  time_ms: number;
}
