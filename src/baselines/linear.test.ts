import { describe, expect, it } from 'vitest';
import { fittingProgress } from './linear.js';

describe('fitting progress', () => {
  it('says in words how many labels still converge, at most once per interval', () => {
    const lines: string[] = [];
    const often = fittingProgress('RuMedTop3', 1120, (l) => lines.push(l), 0);
    often(3, 40);
    expect(lines[0]).toMatch(
      /^RuMedTop3: fitting the classifier, 40 of 1120 label\(s\) still converging \(pass 3, \d+ s\)$/,
    );
    const rare = fittingProgress('RuMedTop3', 1120, (l) => lines.push(l), 60_000);
    for (let pass = 1; pass <= 100; pass++) rare(pass, 10);
    expect(lines.length).toBe(1);
  });
});
