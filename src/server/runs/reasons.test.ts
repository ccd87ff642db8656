import { describe, expect, it } from 'vitest';
import { reasonOf } from './reasons.js';

describe('reasonOf', () => {
  it('classes the failures workers write, without their addresses', () => {
    expect(
      reasonOf(
        'http://10.0.0.7:8000/v1 is down: 5 requests in a row could not reach it or timed out (the last: …)',
      ),
    ).toBe('down');
    expect(
      reasonOf('http://10.0.0.7:8000/v1/chat/completions: cannot reach 10.0.0.7:8000: nothing listens there'),
    ).toBe('unreachable');
    expect(reasonOf('… HTTP 401: Incorrect API key (the server refused the key: check --api-key-env)')).toBe(
      'key',
    );
    expect(reasonOf('7 of 1678 requests failed, so the run is incomplete and was not scored:')).toBe(
      'requests',
    );
    expect(reasonOf('10 of 10 replies could not be read as answers (10 echo)')).toBe('replies');
    expect(
      reasonOf(
        'http://model.example:8000/v1/chat/completions: not connected: model.example resolves to 127.0.0.1, which is a loopback address (this machine); a worker connects only to public addresses: start it with --allow-private if …',
      ),
    ).toBe('address');
    expect(
      reasonOf(
        "refused: the cell's key is in TEAM_KEY, which this worker does not send (its --endpoint-keys: none); start the worker with --endpoint-keys TEAM_KEY if …",
      ),
    ).toBe('keyVariable');
    expect(reasonOf('something else entirely')).toBe('other');
  });
});
