// dashboard: the Node side of `ragen dashboard` (run-directory readers and the HTTP server); the page is dashboard/.
export { startDashboard, packageDir, type Dashboard, type DashboardOptions } from './server.js';
export { RunIndex, runDetail, summarize, isRunDir, readRunConfig, LIVE_SECONDS, type RunDetail, type RunStatus, type RunSummary } from './runs.js';
export { evalSummary, readEvalFile, readRollouts, type EpisodeFile, type TagResult } from './episodes.js';
export { parseJsonl, readJsonl, type JsonlRead } from './jsonl.js';
