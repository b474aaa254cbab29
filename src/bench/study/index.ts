// study: RAGEN-2's comparison on our own runs (issue #18): the resumable runs, their summary, markdown and figures.
export {
  STUDY_CONFIGS,
  STUDY_SEEDS,
  STUDY_OVERRIDES,
  studyConfigs,
  studyRunDir,
  studyRunState,
  studyPlan,
  runStudy,
  type StudyConfig,
  type StudyRunState,
  type RunStudyOptions,
} from './runs.js';
export {
  summarizeStudy,
  readStudyRun,
  spread,
  spreadSeries,
  firstFall,
  regimeOf,
  earliestWarning,
  endMeans,
  END_WINDOW,
  WARNING_KINDS,
  type StudySummary,
  type StudyRun,
  type ConfigSummary,
  type Spread,
  type SpreadSeries,
  type CollapsePoint,
  type WarningKind,
} from './summary.js';
export { studyMarkdown, fmtSpread } from './markdown.js';
export {
  studyFigures,
  binned,
  successFigure,
  collapseFigure,
  regimeFigure,
  configColor,
  type Figure,
} from './figures.js';
export { writePngs, chromiumPath } from './png.js';
export { niceTicks, scale } from './svg.js';
