// dashboard: the Node side of `ragen dashboard` (the HTTP server and the episode files it shows; run summaries are
// src/metrics/runs.ts); the page is dashboard-ui/.
export { startDashboard, packageDir, type Dashboard, type DashboardOptions } from './server.js';
export { evalSummary, readEvalFile, readRollouts, type EpisodeFile, type TagResult } from './episodes.js';
// The shapes the server's JSON routes answer with (the page's api.ts reads them).
export type { RunDetail, RunSummary } from '../metrics/index.js';
