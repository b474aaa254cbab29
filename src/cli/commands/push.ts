// `ragen push`: a run's checkpoint to the Hugging Face Hub as a model repository: the policy's weights (a LoRA run's
// adapter and the base weights it names), config,
// generation config, tokenizer and chat template, the run's config and metrics under ragen/, and a generated model
// card (README.md). The checkpoint is verified against its manifest before anything is read or sent.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { entryTags, loadSavedConfig } from '../../config/index.js';
import { modelCard, readMetricsFile } from '../../metrics/index.js';
import { ADAPTER_DIR, baseWeightFiles, checkRepoId, hubToken, pushModel, type PushFile } from '../../model/index.js';
import { openModelDir } from '../../train/index.js';
import { packageRoot, packageVersion, UsageError, writeFileAt } from '../../util/index.js';

/** Options of `ragen push`, as commander parses them. */
export interface PushCommandOptions {
  repo: string;
  private?: boolean;
  message?: string;
  hubUrl?: string;
  dryRun?: string | boolean;
  allowUnverifiedCheckpoint?: boolean;
}

/** What of a checkpoint stays behind: the trainer's own state, the critic and the optimizer moments. */
const NOT_PUSHED = new Set([
  'checkpoint.json',
  'trainer-state.json',
  'metrics.jsonl',
  'config.yaml',
  'critic',
  'optimizer',
]);

const EXAMPLES = `
The token comes from HF_TOKEN, else from huggingface_hub's login file (HF_TOKEN_PATH, $HF_HOME/token,
~/.cache/huggingface/token). HF_ENDPOINT (or --hub-url) names another Hub. The repository is created when it does
not exist (public unless --private). See docs/models.md, "Sharing a trained model".

Examples:
  $ ragen push runs/SimpleSokoban__gae__10000__20260101-120000 --repo me/sokoban-agent
  $ ragen push runs/my-run/checkpoints/step-40 --repo my-org/agent --private --message "step 40"
  $ ragen push runs/my-run --repo me/agent --dry-run card.md     # write the card, list the files, send nothing`;

export function register(program: Command): void {
  program
    .command('push')
    .description(
      "Upload a run's checkpoint to the Hugging Face Hub as a model repository (weights, tokenizer, chat template, model card).",
    )
    .argument('<run>', 'a run directory (its newest checkpoint) or one of its checkpoints/step-N')
    .requiredOption('--repo <owner/name>', 'the model repository to create or update')
    .option('--private', 'create the repository private (when it does not exist yet)')
    .option('--message <text>', "the commit's title [Upload model with ragen-ts]")
    .option('--hub-url <url>', 'the Hub to upload to [HF_ENDPOINT, else https://huggingface.co]')
    .option('--dry-run [card.md]', 'list the files and write the model card (to card.md, else stdout); upload nothing')
    .option(
      '--allow-unverified-checkpoint',
      'accept a checkpoint whose checkpoint.json has no SHA-256 digests (the version-1 format), its files checked by size only (warns)',
    )
    .addHelpText('after', EXAMPLES)
    .action(async (run: string, opts: PushCommandOptions) => {
      await push(run, opts, (line) => process.stderr.write(`push: ${line}\n`));
    });
}

/** The files of checkpoint `dir` a model repository holds (README.md and ragen/ added by `pushFiles`). */
function modelFiles(dir: string): PushFile[] {
  const out: PushFile[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      if (!rel && NOT_PUSHED.has(name)) continue;
      if (statSync(join(dir, path)).isDirectory()) walk(path);
      else out.push({ path, source: { file: join(dir, path) } });
    }
  };
  walk('');
  return out;
}

/**
 * A LoRA run's checkpoint holds adapters naming their base directory, not the base (src/model/checkpoint.ts): the
 * repository gets the base's weight files as they are on disk, and the adapter's base becomes the repository (`..`
 * from adapter/, as a checkpoint with its own weights writes it) instead of a path on this machine.
 */
function baseFiles(checkpoint: string): PushFile[] {
  const found = baseWeightFiles(checkpoint);
  if (found === null) return [];
  const { base, names } = found;
  const adapterConfig = join(checkpoint, ADAPTER_DIR, 'adapter_config.json');
  const peft = { ...(JSON.parse(readFileSync(adapterConfig, 'utf8')) as object), base_model_name_or_path: '..' };
  return [
    ...names.map((name) => ({ path: name, source: { file: join(base, name) } })),
    { path: `${ADAPTER_DIR}/adapter_config.json`, source: { text: `${JSON.stringify(peft, null, 2)}\n` } },
  ];
}

/** The checkpoint's run directory (`<run>/checkpoints/step-N` -> `<run>`). */
const runOf = (checkpoint: string) => dirname(dirname(checkpoint));

/** Everything `ragen push` would upload from the verified checkpoint `checkpoint`, the card included. */
export function pushFiles(checkpoint: string, repo: string): { files: PushFile[]; card: string } {
  const run = runOf(checkpoint);
  const config = loadSavedConfig(run);
  const step = Number(basename(checkpoint).replace(/^step-/, ''));
  const configYaml = readFileSync(join(run, 'config.yaml'), 'utf8');
  const metrics = readMetricsFile(join(checkpoint, 'metrics.jsonl'));
  const card = modelCard({
    repo,
    runName: basename(run),
    step,
    baseModel: shippedName(config.model.path),
    algorithm: config.algo.advEstimator,
    trainEnvs: [...new Set(entryTags(config, 'train'))],
    ...(config.model.lora.rank > 0 ? { loraRank: config.model.lora.rank } : {}),
    configYaml,
    metrics,
    version: packageVersion(),
  });
  const base = baseFiles(checkpoint);
  const files: PushFile[] = [
    ...modelFiles(checkpoint).filter((f) => !base.some((b) => b.path === f.path)),
    ...base,
    { path: 'README.md', source: { text: card } },
    { path: 'ragen/config.yaml', source: { file: join(run, 'config.yaml') } },
    { path: 'ragen/metrics.jsonl', source: { file: join(checkpoint, 'metrics.jsonl') } },
  ];
  return { files, card };
}

/** A shipped model (models/<name> of this package) by its name, anything else as configured. */
function shippedName(path: string): string {
  const shipped = join(packageRoot(), 'models');
  return dirname(path) === shipped ? basename(path) : path;
}

/** Run `ragen push`. */
export async function push(run: string, opts: PushCommandOptions, say: (line: string) => void): Promise<void> {
  checkRepoId(opts.repo);
  const checkpoint = openModelDir(run, {
    say,
    ...(opts.allowUnverifiedCheckpoint ? { allowUnverified: true } : {}),
  });
  if (!readdirSync(checkpoint).includes('trainer-state.json'))
    throw new UsageError(
      `\`${run}\` is a model folder, not a run's checkpoint: \`ragen push\` uploads what a run trained (give the run directory or its checkpoints/step-N)`,
    );
  const { files, card } = pushFiles(checkpoint, opts.repo);
  if (opts.dryRun !== undefined) {
    for (const f of files) say(`would upload ${f.path}`);
    if (typeof opts.dryRun === 'string') {
      writeFileAt(opts.dryRun, card, 'write the model card', '--dry-run');
      say(`wrote the model card to ${opts.dryRun}`);
    } else console.log(card);
    return;
  }
  const token = hubToken();
  if (!token)
    throw new UsageError(
      'No Hugging Face token: set HF_TOKEN to a token with write access (https://huggingface.co/settings/tokens), or log in with `hf auth login`',
    );
  const result = await pushModel(files, {
    repo: opts.repo,
    token,
    ...(opts.hubUrl ? { hubUrl: opts.hubUrl } : {}),
    ...(opts.private ? { private: true } : {}),
    ...(opts.message ? { message: opts.message } : {}),
    say,
  });
  say(`${result.created ? 'created and uploaded' : 'uploaded'} ${files.length} files: ${result.commitUrl}`);
  console.log(result.repoUrl);
}
