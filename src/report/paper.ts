/**
 * The paper's test-set results (Blinov et al., 2022, Table 3) and the human reference, for tables that show a
 * result beside them. Metric values in percent, keyed like our results.
 */
import type { MetricName } from '../tasks/types.js';

export interface PaperRow {
  model: string;
  tasks: Record<string, Partial<Record<MetricName, number>>>;
  overall: number;
  /**
   * MedBench's six-task overall (the five public tasks and ECG2Pathology), where MedBench's own table gives the row
   * one: Naive 29.53 (its ECG2Pathology 1.15 with the paper's 35.21), Human 58.13. The paper has no such column.
   */
  overallSix?: number;
}

const row = (
  model: string,
  top3: [number, number],
  rec: [number, number],
  danet: number,
  nli: number,
  ner: [number, number],
  overall: number,
): PaperRow => ({
  model,
  tasks: {
    RuMedTop3: { accuracy: top3[0], hit_at_3: top3[1] },
    RuMedSymptomRec: { accuracy: rec[0], hit_at_3: rec[1] },
    RuMedDaNet: { accuracy: danet },
    RuMedNLI: { accuracy: nli },
    RuMedNER: { accuracy: ner[0], f1: ner[1] },
  },
  overall,
});

export const PAPER_ROWS: readonly PaperRow[] = [
  { ...row('Naive', [10.58, 22.02], [1.93, 5.3], 50.0, 33.33, [93.66, 51.96], 35.21), overallSix: 29.53 },
  row('Feature-based', [49.76, 72.75], [32.05, 49.4], 51.95, 59.7, [94.4, 62.89], 58.46),
  row('BiLSTM', [40.88, 63.5], [20.24, 31.33], 52.34, 60.06, [94.74, 63.26], 53.87),
  row('RuBERT', [39.54, 62.29], [18.55, 34.22], 67.19, 77.64, [96.63, 73.53], 61.44),
  row('RuPoolBERT', [47.45, 70.44], [34.94, 52.05], 71.48, 77.29, [96.47, 73.15], 67.2),
  { ...row('Human', [25.06, 48.54], [7.23, 12.53], 93.36, 83.26, [96.09, 76.18], 61.89), overallSix: 58.13 },
];
