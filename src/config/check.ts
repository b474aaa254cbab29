// Run-time checks of a resolved config: things the schema cannot know when the file loads (the model
// directory exists, env tags are registered, per-tag env configs fit each env's own schema).
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { findModelPath, isHubId, shippedModels } from '../model/index.js';
import { envSpec, listEnvs, resolveEnvConfig, resolveEnvId } from '../env/index.js';
import { ConfigError, didYouMean, RagenError } from '../util/index.js';
import type { RagenConfig } from './schema.js';

/** Options of `checkRunConfig`. */
export interface RunCheckOptions {
  /** Skip the model-directory check (tests, or runs handed an engine already built). @default false */
  skipModel?: boolean;
}

/**
 * Every problem that would stop the run, as one ConfigError (each line names the key, the value and the fix).
 * Returns the per-tag env configs resolved by each env's schema, keyed by tag.
 */
export function checkRunConfig(
  config: RagenConfig,
  options: RunCheckOptions = {},
): Record<string, Record<string, unknown>> {
  const problems: string[] = [];
  if (!options.skipModel) {
    // findModelPath: the user's directory, else a shipped model (`ragen-tiny`), else a cached Hub snapshot. A Hub id
    // not cached yet passes here: the trainer downloads it (or says why it cannot) before loading.
    const { path } = config.model;
    const dir = findModelPath(path);
    if (dir === null) {
      if (isAbsolute(path) || !isHubId(path)) {
        problems.push(
          `Bad config value \`model.path\` = ${JSON.stringify(path)}: no such directory (${resolve(path)}), no shipped model of that name (${shippedModels().join(', ')}) and no Hub id (owner/name). Point it at a model in Hugging Face layout (config.json, model.safetensors, tokenizer.json).`,
        );
      }
    } else if (!existsSync(join(dir, 'config.json'))) {
      problems.push(
        `Bad config value \`model.path\` = ${JSON.stringify(path)}: the directory (${dir}) has no config.json, so it is not a model in Hugging Face layout.`,
      );
    }
    const critic = config.model.critic.path;
    if (critic !== null && findModelPath(critic) === null && (isAbsolute(critic) || !isHubId(critic))) {
      problems.push(
        `Bad config value \`model.critic.path\` = ${JSON.stringify(critic)}: no such directory; use null to start the critic from \`model.path\`.`,
      );
    }
  }
  const ids = listEnvs().map((e) => e.id);
  const used = new Set<string>();
  for (const split of ['train', 'val'] as const) {
    config.env[split].forEach((entry, i) => {
      if (entry.tag === undefined) return; // an agent program: the gateway runs it, no registry involved
      used.add(entry.tag);
      try {
        envSpec(entry.tag);
      } catch (err) {
        if (!(err instanceof RagenError)) throw err;
        problems.push(
          `Bad config value \`env.${split}.${i}.tag\` = ${JSON.stringify(entry.tag)}: no environment has this id.${didYouMean(entry.tag!, ids)} Run \`ragen envs\` for the list.`,
        );
      }
    });
  }
  const resolved: Record<string, Record<string, unknown>> = {};
  for (const section of ['config', 'wrappers'] as const) {
    for (const tag of Object.keys(config.env[section])) {
      if (!used.has(tag)) {
        problems.push(
          `Bad config key \`env.${section}.${tag}\`: no entry of \`env.train\` or \`env.val\` uses the tag \`${tag}\`.${didYouMean(tag, used)}`,
        );
      }
    }
  }
  for (const [tag, w] of Object.entries(config.env.wrappers)) {
    if (w.rewardClip && !(w.rewardClip[0]! <= w.rewardClip[1]!))
      problems.push(
        `Bad config value \`env.wrappers.${tag}.rewardClip\` = [${w.rewardClip.join(', ')}]: give [low, high] with low <= high.`,
      );
  }
  for (const tag of used) {
    if (!ids.includes(tag) && !isRegistered(tag)) continue; // reported above
    try {
      resolved[tag] = resolveEnvConfig(tag, { ...(config.env.config[tag] ?? {}) });
    } catch (err) {
      if (!(err instanceof RagenError)) throw err;
      problems.push(`Bad config \`env.config.${tag}\`: ${err.message}`);
    }
  }
  const rc = config.algo.rolloutCorrection;
  if (rc.mode === 'mis' && !(rc.lowerThreshold < rc.threshold))
    problems.push(
      `Bad config value \`algo.rolloutCorrection.lowerThreshold\` = ${rc.lowerThreshold}: it must be below \`threshold\` (${rc.threshold}), or nothing is kept.`,
    );
  const d = config.algo.distill;
  if (d.teacher === null && d.mode === 'alone')
    problems.push(
      'Bad config value `algo.distill.mode` = "alone": there is no teacher to distil from; set `algo.distill.teacher` (a model directory, a run checkpoint or a server URL) or drop `mode`.',
    );
  const f = config.algo.filter;
  if (f.strategy === 'percentile_range' && !(f.percentileLow <= f.percentileHigh))
    problems.push(
      `Bad config value \`algo.filter.percentileLow\` = ${f.percentileLow}: it must not exceed \`percentileHigh\` (${f.percentileHigh}).`,
    );
  if (problems.length) throw new ConfigError(problems.join('\n'));
  return resolved;
}

/** Episodes rolled out per training step (Σ groups × groupSize over `env.train`). */
export function trainEpisodesPerStep(config: RagenConfig): number {
  return config.env.train.reduce((n, e) => n + e.groups * e.groupSize, 0);
}

/** Validation episodes per validation (Σ groups × groupSize over `env.val`). */
export function valEpisodes(config: RagenConfig): number {
  return config.env.val.reduce((n, e) => n + e.groups * e.groupSize, 0);
}

/** Whether `tag` names a registered env through an alias (a connected `remote:` id). */
function isRegistered(tag: string): boolean {
  try {
    resolveEnvId(tag);
    return true;
  } catch {
    return false;
  }
}
