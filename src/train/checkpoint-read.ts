// The model directory every reader of a run's weights opens (`ragen eval --run/--model`, `ragen serve`), checked the
// way `--resume` checks it: a checkpoint's manifest is verified by content (verifyCheckpoint) before any weight is read.
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { shippedModels } from '../model/index.js';
import { UsageError } from '../util/index.js';
import { MANIFEST_FILE, verifyCheckpoint } from './checkpoint-io.js';

/**
 * A verified model directory: `dir` itself if it holds config.json, else the newest `checkpoints/step-N/` of a run
 * (the newest by step, not the newest intact one: a damaged checkpoint is named, never skipped). A checkpoint (a
 * folder with checkpoint.json, or a `step-N/` of a run directory) must pass `verifyCheckpoint`; a plain model
 * directory without a manifest (a Hugging Face download, `ragen model init`) loads as it is.
 */
export function openModelDir(dir: string): string {
  const modelDir = existsSync(join(dir, 'config.json')) ? dir : newestCheckpoint(dir);
  if (existsSync(join(modelDir, MANIFEST_FILE)) || isRunCheckpoint(modelDir)) verifyCheckpoint(modelDir);
  return modelDir;
}

function newestCheckpoint(dir: string): string {
  const ckpts = join(dir, 'checkpoints');
  const steps = existsSync(ckpts)
    ? readdirSync(ckpts)
        .map((name) => ({ name, step: Number(/^step-(\d+)$/.exec(name)?.[1] ?? NaN) }))
        .filter((s) => Number.isFinite(s.step) && existsSync(join(ckpts, s.name, 'config.json')))
        .sort((a, b) => b.step - a.step)
    : [];
  if (steps.length === 0) throw new UsageError(`No model in \`${dir}\`: expected config.json there, or a run directory with checkpoints/step-N/config.json, a shipped model (${shippedModels().join(', ')}) or a Hub id (owner/name).`);
  return join(ckpts, steps[0]!.name);
}

/** `<run>/checkpoints/step-N` of a run directory (one with config.yaml): the trainer always wrote a manifest there. */
function isRunCheckpoint(dir: string): boolean {
  const parent = dirname(dir);
  return /^step-\d+$/.test(basename(dir)) && basename(parent) === 'checkpoints' && existsSync(join(dirname(parent), 'config.yaml'));
}
