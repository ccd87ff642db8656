/**
 * The error of the HTTP edge, with a closed set of codes (one per meaning; scripts read `code`), answered as JSON
 * `{error, code}` under /api or as an error page, with its status. Services throw it; `createApp` maps it in one place.
 */
type HttpErrorCode =
  | 'ADMIN_ONLY'
  | 'BAD_ACTION'
  | 'BAD_ANSWER'
  | 'BAD_CAMPAIGN'
  /** A board API's cursor that this server did not write, or wrote for another board. */
  | 'BAD_CURSOR'
  /** An evaluation request that names no registered model, or no board. */
  | 'BAD_EVALUATION'
  | 'BAD_IDEMPOTENCY_KEY'
  | 'BAD_JSON'
  /** A board API's limit out of range or not a number. */
  | 'BAD_LIMIT'
  | 'BAD_MULTIPART'
  /** A board page's query (sort, dir, q, page) that is not one it takes. */
  | 'BAD_QUERY'
  | 'BAD_REQUEST'
  | 'BAD_TOKEN'
  | 'BODY_TOO_LARGE'
  /** The chart lane's queue is full: the page is asked again after Retry-After. */
  | 'BUSY'
  | 'CAMPAIGN_CLOSED'
  | 'CSRF'
  | 'DIFFERENT_BOARDS'
  /** A model server that is not on the platform's allow-list. */
  | 'ENDPOINT_NOT_ALLOWED'
  /** A closed test's campaign published before every sampled item has its answers. */
  | 'INCOMPLETE_CAMPAIGN'
  | 'INVALID_METADATA'
  | 'MISDIRECTED'
  | 'NOT_FOUND'
  /** An approval of a run that is not waiting for one. */
  | 'NOT_PENDING'
  | 'NOTHING_TO_PUBLISH'
  | 'NOT_SCORED'
  | 'NO_GOLD'
  | 'QUOTA_EXCEEDED'
  | 'RATE_LIMITED'
  /** Runs need the leaderboard on PostgreSQL, the workers' queue. */
  | 'RUNS_UNAVAILABLE'
  | 'TOKEN_REQUIRED'
  | 'TOO_MANY_PARTS'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'UPLOAD_TOO_LARGE';

export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 421 | 422 | 429 | 503,
    readonly code: HttpErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
