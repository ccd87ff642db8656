/**
 * Why a run or a cell failed, as a class anybody may see. The full text names the model server's address, its
 * replies and the command-line advice a worker gave: the admin's. Signed out, the pages and the API show only the
 * class ("the model server could not be reached"), in the page's language.
 */
export const REASONS = [
  'down',
  'unreachable',
  'key',
  'model',
  'redirect',
  'requests',
  'replies',
  'loglik',
  'allowList',
  'address',
  'keyVariable',
  'data',
  'spec',
  'other',
] as const;
export type Reason = (typeof REASONS)[number];

const RULES: [RegExp, Reason][] = [
  // First: these messages name a host and a variable, and words the later rules look for.
  [/: not connected: |connects only to public addresses/, 'address'],
  [/which this worker does not send|workers' own variables/, 'keyVariable'],
  [/ is down: /, 'down'],
  [/cannot reach|ECONNREFUSED|ENOTFOUND|timed out|broke off|nothing listens/i, 'unreachable'],
  [/refused the key|HTTP 40[13]/, 'key'],
  [/HTTP 404|no such model/i, 'model'],
  [/redirect/i, 'redirect'],
  [/replies could not be read/, 'replies'],
  [/requests failed|incomplete/, 'requests'],
  [/log-likelihood|log-probabilit/i, 'loglik'],
  [/allow-list|not allowed|registered/i, 'allowList'],
  [/data differ|DATA_|data folder/i, 'data'],
  [/spec|older rumedbench|another rumedbench version/i, 'spec'],
];

/** The class of a failure's text. */
export function reasonOf(text: string): Reason {
  return RULES.find(([re]) => re.test(text))?.[1] ?? 'other';
}

/** The English words of each class (the API's, and the English pages'). */
export const REASON_TEXT: Record<Reason, string> = {
  down: 'the model server is down (it stopped answering)',
  unreachable: 'the model server could not be reached',
  key: 'the model server refused the key',
  model: 'the model server does not know the model',
  redirect: 'the model server redirected the request elsewhere',
  requests: 'some requests failed',
  replies: 'most replies could not be read as answers',
  loglik: 'the model server cannot score by log-likelihood',
  allowList: 'the model server is not on the platform’s allow-list',
  address: 'the model server’s address is not a public one',
  keyVariable: 'the workers do not send the model server’s key',
  data: 'the worker’s data differ from the plan’s',
  spec: 'the run was queued by another release',
  other: 'the run failed',
};
