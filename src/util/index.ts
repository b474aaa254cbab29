// util: the leaf module every other folder may import.
export { Rng } from './rng.js';
export { assert, assertNever } from './assert.js';
export { editDistance, nearest, didYouMean, suggestions } from './suggest.js';
export {
  RagenError,
  ConfigError,
  EnvNotFoundError,
  ResetNeededError,
  ShapeError,
  CheckpointError,
  UsageError,
  TrackingError,
} from './errors.js';
export { FileSystemError, fileSystemError, isErrnoError, withFileErrors } from './fs-errors.js';
export { makeDir, writeFileAt, checkCreatable, pseudoFilesystemOf, existingAncestor, withSetting } from './make-dir.js';
export { HOST_PORT, freePort } from './host-port.js';
export { checkExposure, isLoopback, type Exposure } from './exposure.js';
export { packageRoot, packageVersion } from './package-root.js';
export {
  ApiError,
  EventStream,
  badParam,
  clientGone,
  closeServer,
  errorBody,
  httpServer,
  listen,
  pathOf,
  preview,
  readBody,
  readJson,
  sendJson,
  type ErrorForm,
  type FailurePolicy,
} from './http.js';
export { decodePng, encodePng, isPng, PngError, type RgbImage } from './png.js';
export { parseSeed, parsePositiveInt, parsePositive, parseConfigPairs } from './option-values.js';
