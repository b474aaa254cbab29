// Where a model spec (a directory, a run, a shipped model or a Hub id) points: shared by `ragen eval`, `ragen serve`
// and the lab.
import { findModelPath, isHubId, resolveModelPath } from '../model/index.js';
import { openModelDir } from '../train/index.js';

/**
 * A model directory: `spec` itself if it is a checkpoint or holds config.json, else the newest `checkpoints/step-N` of
 * a run (said on stderr), verified against its manifest first as `--resume` does (src/train/checkpoint-read.ts; a
 * damaged newest step is refused by name); `spec` may also name a shipped model (`ragen-tiny`) or a Hub id in the local
 * cache (see `fetchHubModel` for downloads).
 */
export function resolveModelDir(spec: string, opts: { allowUnverified?: boolean } = {}): string {
  const say = (line: string) => void process.stderr.write(`ragen: ${line}\n`);
  return openModelDir(findModelPath(spec) ?? spec, {
    say,
    warn: say,
    ...(opts.allowUnverified ? { allowUnverified: true } : {}),
  });
}

/** Download `spec` into the Hugging Face cache when it is a Hub id that is neither a local directory nor cached. */
export async function fetchHubModel(spec: string): Promise<void> {
  if (isHubId(spec) && findModelPath(spec) === null) await resolveModelPath(spec);
}
