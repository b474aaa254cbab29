// The error classes: one per thing the user must fix. Messages say what failed, the values, and the fix.

/** Base class of every error ragen-ts throws on purpose. */
export class RagenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A configuration key or value is wrong (unknown key, bad type, out of range). */
export class ConfigError extends RagenError {}

/** An environment id is not registered. */
export class EnvNotFoundError extends RagenError {}

/** An environment was stepped before `reset`, or after its episode ended. */
export class ResetNeededError extends RagenError {}

/** Tensor shapes do not fit an operation. */
export class ShapeError extends RagenError {}

/** A checkpoint, model or tokenizer file is missing or malformed. */
export class CheckpointError extends RagenError {}

/** Command-line usage is wrong. */
export class UsageError extends RagenError {}

/** An experiment tracker (W&B) is missing or refused the run. */
export class TrackingError extends RagenError {}
