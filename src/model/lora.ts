// LoRA (Hu et al. 2021) as PEFT implements it: y = W x + (alpha / r) * B A dropout(x), A (r, in) kaiming-uniform,
// B (out, r) zero; only A and B train. Saved in PEFT's layout: adapter_config.json + adapter_model.safetensors, under
// the module names PEFT writes for the model (a vision-language model's language model is `model.language_model`).
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dropout, keep, linear, matmul, noGrad, rand, scale, tensor, zeros, type Tensor } from '../tensor/index.js';
import { CheckpointError, ConfigError, didYouMean, Rng } from '../util/index.js';
import { expectWeight, readSafetensors, rejectUnexpected, writeSafetensors, type WeightMap } from './safetensors.js';

/** What LoRA needs of the model it adapts: the Transformer, named by shape so lora.ts need not import it. */
export interface LoraHost {
  readonly config: { readonly numLayers: number };
  readonly weights: Map<string, Tensor>;
  /** A weight's shape, float32 or bf16 (bf16 projections are not in `weights`). */
  weightShape(name: string): readonly number[] | undefined;
  lora: LoraAdapters | null;
  setBaseTrainable(trainable: boolean): void;
}

/** The linear modules of a decoder layer (PEFT's "all-linear" = all of them; the LM head is never adapted). */
export const LINEAR_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** LoRA settings (PEFT's LoraConfig names in camelCase). */
export interface LoraConfig {
  /** Rank r of the update B A. */
  r: number;
  /** Scale numerator: the update is multiplied by alpha / r. */
  alpha: number;
  /** Dropout on the adapter's input while training. @default 0 */
  dropout?: number;
  /** "all-linear" or module names such as ["q_proj", "v_proj"]. @default "all-linear" */
  targetModules?: 'all-linear' | string[];
}

interface Adapter {
  A: Tensor; // (r, in)
  B: Tensor; // (out, r)
}

/** PEFT's key of a module's adapter matrix. */
export function peftKey(module: string, which: 'A' | 'B'): string {
  return `base_model.model.${module}.lora_${which}.weight`;
}

/**
 * The module tree an adapter file names. A causal LM's decoder layers are `model.layers.*`. A vision-language model
 * (Qwen2.5-VL, Qwen3-VL) holds them at `model.language_model.layers.*` in transformers >= 4.52, and PEFT saves its
 * adapters under those names (and with transformers 5 loads only those): 'vision-language' writes them, and reads them
 * or the Hub layout's `model.layers.*` that our saves wrote before. In memory the adapters keep `model.layers.*`.
 */
export type AdapterNaming = 'causal-lm' | 'vision-language';

const LAYERS_KEY = 'base_model.model.model.layers.';
const VL_LAYERS_KEY = 'base_model.model.model.language_model.layers.';

/** A key under `naming`'s module names (keys in memory are a causal LM's). */
function fileKey(key: string, naming: AdapterNaming): string {
  return naming === 'vision-language' && key.startsWith(LAYERS_KEY)
    ? VL_LAYERS_KEY + key.slice(LAYERS_KEY.length)
    : key;
}

/**
 * A vision-language adapter file's tensors under the names in memory (`model.layers.*`), from either naming. Refuses
 * adapters on the vision tower (PEFT puts them there when target_modules lists gate_proj / up_proj / down_proj, the
 * names of Qwen2.5-VL's vision MLPs too): neither engine adapts the tower.
 */
function fromVisionLanguageNames(weights: WeightMap, source: string): WeightMap {
  const tower = [...weights.keys()].filter((k) => k.startsWith('base_model.model.') && /\.visual\./.test(k));
  if (tower.length > 0)
    throw new CheckpointError(
      `${source} holds LoRA adapters on the vision tower (${tower.slice(0, 2).join(', ')}${tower.length > 2 ? `, ... ${tower.length} in all` : ''}), which neither engine applies (LoRA adapts the language model; model.vision.train trains the tower whole). Train the adapter with target_modules restricted to the language model, as our saves write it: ${languageModelPattern(LINEAR_MODULES)}`,
    );
  const out: WeightMap = new Map();
  for (const [k, w] of weights)
    out.set(k.startsWith(VL_LAYERS_KEY) ? LAYERS_KEY + k.slice(VL_LAYERS_KEY.length) : k, w);
  return out;
}

/**
 * PEFT's target_modules (a regex it matches whole) for `modules` of a vision-language model's language model. A list
 * of names would also adapt Qwen2.5-VL's vision MLPs, which our file has no tensors for (PEFT: missing keys).
 */
function languageModelPattern(modules: readonly string[]): string {
  return `model\\.language_model\\.layers\\.\\d+\\.(self_attn|mlp)\\.(${modules.join('|')})`;
}

export class LoraAdapters {
  /** Adapters by HF module path, e.g. `model.layers.0.self_attn.q_proj`. */
  readonly adapters = new Map<string, Adapter>();
  readonly modules: string[];
  readonly scaling: number;

  private constructor(readonly config: Required<LoraConfig>) {
    this.modules = resolveTargets(config.targetModules);
    this.scaling = config.alpha / config.r;
  }

  /**
   * Attach fresh adapters to `model` (A uniform in +-1/sqrt(in) as PEFT's kaiming_uniform(a=sqrt(5)), B zero)
   * and freeze its base weights.
   */
  static attach(model: LoraHost, config: LoraConfig, seed = 0): LoraAdapters {
    const lora = new LoraAdapters(normalise(config));
    const rng = new Rng(seed);
    for (const [module, out, inp] of targetShapes(model, lora.modules)) {
      const bound = 1 / Math.sqrt(inp);
      const A = keep(rand([lora.config.r, inp], rng, -bound, bound, { requiresGrad: true }));
      const B = keep(zeros([out, lora.config.r], { requiresGrad: true }));
      lora.adapters.set(module, { A, B });
    }
    model.setBaseTrainable(false);
    model.lora = lora;
    return lora;
  }

  /**
   * Load PEFT adapters from `dir` onto `model` (base frozen), their keys under `naming`'s module names. target_modules
   * may be a list of names, "all-linear", or a regex (PEFT's form): then the modules are those the file has tensors for.
   */
  static async load(model: LoraHost, dir: string, naming: AdapterNaming = 'causal-lm'): Promise<LoraAdapters> {
    const cfgPath = join(dir, 'adapter_config.json');
    if (!existsSync(cfgPath)) throw new CheckpointError(`no LoRA adapter in ${dir}: adapter_config.json is missing`);
    const raw = JSON.parse(await readFile(cfgPath, 'utf8')) as Record<string, unknown>;
    if (raw.peft_type !== undefined && raw.peft_type !== 'LORA')
      throw new CheckpointError(`${cfgPath}: peft_type ${String(raw.peft_type)} is not supported (only LORA)`);
    if (raw.use_dora || raw.use_rslora)
      throw new CheckpointError(`${cfgPath}: DoRA / rsLoRA adapters are not supported`);
    const source = join(dir, 'adapter_model.safetensors');
    const read = await readSafetensors(source);
    const weights = naming === 'vision-language' ? fromVisionLanguageNames(read, source) : read;
    const targets = raw.target_modules;
    const lora = new LoraAdapters(
      normalise({
        r: Number(raw.r),
        alpha: Number(raw.lora_alpha),
        dropout: Number(raw.lora_dropout ?? 0),
        targetModules:
          typeof targets === 'string' && targets !== 'all-linear'
            ? modulesWithTensors(weights, cfgPath, targets)
            : (targets as string[] | 'all-linear'),
      }),
    );
    for (const [module, out, inp] of targetShapes(model, lora.modules)) {
      const a = expectWeight(weights, peftKey(module, 'A'), [lora.config.r, inp], source);
      const b = expectWeight(weights, peftKey(module, 'B'), [out, lora.config.r], source);
      lora.adapters.set(module, {
        A: keep(tensor(a.data, a.shape, { requiresGrad: true })),
        B: keep(tensor(b.data, b.shape, { requiresGrad: true })),
      });
    }
    rejectUnexpected(
      weights,
      new Set([...lora.adapters.keys()].flatMap((m) => [peftKey(m, 'A'), peftKey(m, 'B')])),
      source,
    );
    model.setBaseTrainable(false);
    model.lora = lora;
    return lora;
  }

  /** (alpha / r) * B A dropout(x) for the module, or undefined when it has no adapter. */
  delta(module: string, x: Tensor, rng?: Rng): Tensor | undefined {
    const ad = this.adapters.get(module);
    if (!ad) return undefined;
    const xin = rng && this.config.dropout > 0 ? dropout(x, this.config.dropout, rng) : x;
    return scale(linear(linear(xin, ad.A), ad.B), this.scaling);
  }

  /** Trainable parameters by PEFT key. */
  parameters(): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    for (const [m, ad] of this.adapters) out.push([peftKey(m, 'A'), ad.A], [peftKey(m, 'B'), ad.B]);
    return out;
  }

  /** The adapter weights under PEFT's key names for `naming`'s module tree. */
  exportWeights(naming: AdapterNaming = 'causal-lm'): WeightMap {
    const out: WeightMap = new Map();
    for (const [name, t] of this.parameters())
      out.set(fileKey(name, naming), { shape: [...t.shape], data: t.toFloat32Array() });
    return out;
  }

  /** PEFT's adapter_config.json (a vision-language model's target_modules: a regex over its language model). */
  peftConfig(baseModel = '', naming: AdapterNaming = 'causal-lm'): Record<string, unknown> {
    return {
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: baseModel,
      r: this.config.r,
      lora_alpha: this.config.alpha,
      lora_dropout: this.config.dropout,
      target_modules: naming === 'vision-language' ? languageModelPattern(this.modules) : this.modules,
      bias: 'none',
      fan_in_fan_out: false,
      inference_mode: true,
      init_lora_weights: true,
      use_rslora: false,
      use_dora: false,
      modules_to_save: null,
      layers_to_transform: null,
      layers_pattern: null,
      rank_pattern: {},
      alpha_pattern: {},
      revision: null,
    };
  }

  /** Write adapter_config.json + adapter_model.safetensors into `dir`, named for `naming`'s module tree. */
  async save(dir: string, baseModel = '', naming: AdapterNaming = 'causal-lm'): Promise<void> {
    await mkdir(dir, { recursive: true });
    const config = this.peftConfig(baseModel, naming);
    await writeFile(join(dir, 'adapter_config.json'), JSON.stringify(config, null, 2) + '\n');
    await writeSafetensors(join(dir, 'adapter_model.safetensors'), this.exportWeights(naming));
  }

  /** Fold W += (alpha / r) B A into the base weights, detach the adapters and make the base trainable again. */
  merge(model: LoraHost): void {
    model.setBaseTrainable(true); // refuses a bf16 base before anything changes
    noGrad(() => {
      for (const [module, ad] of this.adapters) {
        const w = model.weights.get(`${module}.weight`)!;
        const delta = matmul(ad.B, ad.A); // (out, in)
        w.backend.axpy(this.scaling, delta.buf, w.buf, w.size);
        delta.dispose();
      }
    });
    this.dispose();
    model.lora = null;
    model.setBaseTrainable(true);
  }

  dispose(): void {
    for (const ad of this.adapters.values()) {
      ad.A.dispose();
      ad.B.dispose();
    }
    this.adapters.clear();
  }
}

function normalise(c: LoraConfig): Required<LoraConfig> {
  if (!Number.isInteger(c.r) || c.r <= 0) throw new ConfigError(`lora.rank must be a positive integer, got ${c.r}`);
  if (!(c.alpha > 0)) throw new ConfigError(`lora.alpha must be > 0, got ${c.alpha}`);
  const dropoutP = c.dropout ?? 0;
  if (!(dropoutP >= 0 && dropoutP < 1)) throw new ConfigError(`lora.dropout must be in [0, 1), got ${dropoutP}`);
  return { r: c.r, alpha: c.alpha, dropout: dropoutP, targetModules: c.targetModules ?? 'all-linear' };
}

function resolveTargets(t: 'all-linear' | string[]): string[] {
  const names = typeof t === 'string' ? [t] : t;
  if (names.includes('all-linear')) return [...LINEAR_MODULES];
  if (names.length === 0)
    throw new ConfigError('lora.targetModules is empty; use "all-linear" or names like ["q_proj", "v_proj"]');
  for (const n of names) {
    if (!(LINEAR_MODULES as readonly string[]).includes(n)) {
      throw new ConfigError(
        `lora target module \`${n}\` is not a linear module of this model.${didYouMean(n, LINEAR_MODULES)} Valid: all-linear, ${LINEAR_MODULES.join(', ')}.`,
      );
    }
  }
  return LINEAR_MODULES.filter((m) => names.includes(m)); // PEFT's (module) order
}

/** The projections `weights` holds adapters for (an adapter whose target_modules is a regex, `pattern`). */
function modulesWithTensors(weights: WeightMap, cfgPath: string, pattern: string): string[] {
  const found = LINEAR_MODULES.filter((m) => [...weights.keys()].some((k) => k.endsWith(`.${m}.lora_A.weight`)));
  if (found.length === 0)
    throw new CheckpointError(
      `${cfgPath}: target_modules ${JSON.stringify(pattern)} is a pattern, and the adapter file holds no lora_A tensor of a decoder projection (${LINEAR_MODULES.join(', ')}); it is not a LoRA adapter of this model.`,
    );
  return found;
}

/** [module path, out features, in features] for every adapted projection. */
function targetShapes(model: LoraHost, modules: readonly string[]): [string, number, number][] {
  const out: [string, number, number][] = [];
  for (let i = 0; i < model.config.numLayers; i++) {
    for (const m of modules) {
      const path = `model.layers.${i}.${m.endsWith('_proj') && ['gate_proj', 'up_proj', 'down_proj'].includes(m) ? 'mlp' : 'self_attn'}.${m}`;
      const shape = model.weightShape(`${path}.weight`)!;
      out.push([path, shape[0]!, shape[1]!]);
    }
  }
  return out;
}
