// What the `env`, `seed` and `generation` sections mean to the agent loop: the env-group manager of a split and the
// sampling of its rollouts. (The `agent` section needs no such step: it is the loop's own AgentConfig.)
import type { EngineSampling, EnvGroupsOptions } from '../agent/index.js';
import type { WrapOptions } from '../env/index.js';
import type { RagenConfig } from './schema.js';
import { tagEntries } from './env-entries.js';

/** The env-group manager settings of the built-in env entries (`tag`) of the training or the validation split. */
export function envGroupsOptions(config: RagenConfig, mode: 'train' | 'val'): EnvGroupsOptions {
  const entries = tagEntries(config, mode);
  const cap = config.agent.maxActionsPerEpisode;
  return {
    tags: entries.map((e) => ({
      env: e.tag,
      nGroups: e.groups,
      config: { ...(config.env.config[e.tag] ?? {}) },
      ...wrappersOf(config.env.wrappers[e.tag]),
      ...(cap !== null ? { maxActionsPerEpisode: cap } : {}),
    })),
    groupSize: entries[0]?.groupSize ?? 1,
    mode,
    seed: config.seed[mode],
  };
}

/** Sampling of training rollouts or of validation (greedy = temperature 0), with sampler seed `seed`. */
export function samplingOf(config: RagenConfig, mode: 'train' | 'val', seed: number): Required<EngineSampling> {
  const { temperature, topP, topK, val } = config.generation;
  if (mode === 'val') return { temperature: val.greedy ? 0 : val.temperature, topP, topK, seed };
  return { temperature, topP, topK, seed };
}

function wrappersOf(w: RagenConfig['env']['wrappers'][string] | undefined): { wrappers?: WrapOptions } {
  return w ? { wrappers: wrapOptionsOf(w) } : {};
}

/** `env.wrappers.<tag>` as `wrapEnv` options: only the wrappers whose settings change something. */
export function wrapOptionsOf(w: RagenConfig['env']['wrappers'][string]): WrapOptions {
  return {
    ...(w.rewardScale !== 1 || w.rewardShift !== 0 || w.rewardClip !== null
      ? {
          rewardScale: {
            scale: w.rewardScale,
            shift: w.rewardShift,
            ...(w.rewardClip ? { clip: [w.rewardClip[0]!, w.rewardClip[1]!] as const } : {}),
          },
        }
      : {}),
    ...(w.formatPenalty !== 0 ? { formatPenalty: w.formatPenalty } : {}),
    ...(w.observationMaxChars !== null
      ? { observation: { maxChars: w.observationMaxChars, keep: w.observationKeep } }
      : {}),
    ...(w.recordEpisodes !== null ? { recordEpisodes: w.recordEpisodes } : {}),
  };
}
