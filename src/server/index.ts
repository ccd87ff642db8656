/**
 * The leaderboard as a library (`import { startServer } from 'rumedbench/server'`): kept apart from the main entry
 * so that scoring does not load the web framework, the database drivers and the worker pool.
 * @example
 * const server = await startServer({ dataDir: 'data/', db: 'board.sqlite', port: 8080, log: createLogger() });
 */
export { createApp } from './app.js';
export type { Entry } from './boards/entries.js';
export { type CampaignSpec, Campaigns } from './campaigns/service.js';
export { openDatabase } from './db/connect.js';
export type { BoardName, SubmissionKind, SubmissionStatus } from './db/schema.js';
export { HttpError } from './errors.js';
export { Leaderboard, type LeaderboardOptions, type UploadAnswer } from './leaderboard.js';
export { openLeaderboard, type RunningServer, type ServeOptions, startServer } from './serve.js';
export { DEFAULT_LIMITS, readUpload, type UploadLimits } from './upload.js';
