// Agents playing live in the browser: a run's checkpoint is fetched as files, loaded into the WASM tensor engine in
// this page, and plays one of the run's validation envs turn by turn (envs are TypeScript and run here too), each turn's
// observation images (a visual env's) drawn beside its text and, for a vision-language checkpoint, read by the model. The server only hands out the files; generation, parsing
// and env steps all run in the browser.
import {
  agentConfig,
  EnvGroups,
  rollout,
  stopSettings,
  type AgentConfig,
  type Episode,
  type Policy,
} from '../../../src/agent/index.js';
import '../../../src/envs/index.js'; // the built-in environments the page plays (registered on import)
import {
  configFromHF,
  generate,
  generateVL,
  isVLConfig,
  parseSafetensors,
  Qwen25VL,
  Transformer,
  vlConfigFromHF,
  type VisionInput,
} from '../../../src/model/index.js';
import { createWasmBackend, getBackend, useBackend } from '../../../src/tensor/browser.js';
import {
  HfTokenizer,
  IMAGE_PAD,
  pixelValues,
  visionProcessorFromJson,
  type VisionProcessor,
} from '../../../src/tokenizer/index.js';
import type { RgbImage } from '../../../src/util/index.js';
import { api, type RunDetail } from '../api.js';
import { errorBox, fmt, h } from '../dom.js';
import type { Page } from './page.js';

interface Loaded {
  step: number;
  model: Transformer;
  tokenizer: HfTokenizer;
  /** A vision-language checkpoint (Qwen2.5-VL, `model` its language model) and its image processor settings. */
  vision?: { model: Qwen25VL; processor: VisionProcessor };
}

let backendReady: Promise<void> | null = null;
/** The single-memory WASM kernels (no cross-origin isolation needed), once per page. */
function initBackend(): Promise<void> {
  backendReady ??= fetch('/kernels/ragen-single.wasm')
    .then((res) => createWasmBackend(res))
    .then((be) => useBackend(be));
  return backendReady;
}

async function fetchBytes(url: string): Promise<Uint8Array> {
  const res = await fetch(url);
  if (!res.ok)
    throw new Error(
      `${url}: ${((await res.json().catch(() => ({}))) as { error?: string }).error ?? `HTTP ${res.status}`}`,
    );
  return new Uint8Array(await res.arrayBuffer());
}

async function loadCheckpoint(run: RunDetail, step: number): Promise<Loaded> {
  const file = (name: string) => api.fileUrl(run.summary.id, `checkpoints/step-${step}/${name}`);
  const json = async (name: string) =>
    JSON.parse(new TextDecoder().decode(await fetchBytes(file(name)))) as Record<string, unknown>;
  await initBackend();
  const [config, weights, tokenizerJson, tokenizerConfig] = await Promise.all([
    json('config.json'),
    fetchBytes(file('model.safetensors')),
    json('tokenizer.json'),
    json('tokenizer_config.json'),
  ]);
  const tokenizer = new HfTokenizer({ tokenizerJson, tokenizerConfig }, `step-${step}`);
  const tensors = parseSafetensors(weights, 'model.safetensors').weights;
  const source = `checkpoint step ${step}`;
  if (!isVLConfig(config))
    return { step, model: Transformer.fromWeights(configFromHF(config, 'config.json'), tensors, source), tokenizer };
  // a vision-language model reads each turn's image: the processor settings its prompts are counted with
  // (a checkpoint without preprocessor_config.json takes Qwen2.5-VL's published settings)
  const processor = visionProcessorFromJson(
    await json('preprocessor_config.json').catch(() => ({})),
    'preprocessor_config.json',
  );
  const vl = Qwen25VL.fromWeights(vlConfigFromHF(config, 'config.json'), tensors, source);
  return { step, model: vl.lm, tokenizer, vision: { model: vl, processor } };
}

/** The envs the run validates on, with their config (what `ragen eval --run` would play). */
function playableEnvs(config: Record<string, unknown> | null): { tag: string; config: Record<string, unknown> }[] {
  const env = (config?.['env'] ?? {}) as {
    val?: { tag?: string }[];
    train?: { tag?: string }[];
    config?: Record<string, Record<string, unknown>>;
  };
  // Agent-program entries (`agent`, no `tag`) run outside the browser: only built-in envs are playable.
  const tags = [
    ...new Set([...(env.val ?? []), ...(env.train ?? [])].flatMap((t) => (t.tag !== undefined ? [t.tag] : []))),
  ];
  return tags.map((tag) => ({ tag, config: env.config?.[tag] ?? {} }));
}

/** A visual env's observation images as canvases of their own pixels, pixelated as drawn (null without images). */
function observationCanvases(images: readonly RgbImage[]): HTMLElement | null {
  if (images.length === 0) return null;
  return h(
    'div',
    { class: 'observation-images' },
    images.map((img, i) => {
      const canvas = h('canvas', {
        width: img.width,
        height: img.height,
        title: `observation image ${i + 1} (${img.width} x ${img.height})`,
        style: { imageRendering: 'pixelated', width: '192px' },
      });
      const rgba = new ImageData(img.width, img.height);
      for (let p = 0; p < img.width * img.height; p++) {
        rgba.data.set(img.data.subarray(3 * p, 3 * p + 3), 4 * p);
        rgba.data[4 * p + 3] = 255;
      }
      canvas.getContext('2d')!.putImageData(rgba, 0, 0);
      return canvas;
    }),
  );
}

/** Yield so the browser paints what was just written (generation blocks the page's thread). */
const nextFrame = () => new Promise((r) => setTimeout(r, 0));

export async function playPage(params: URLSearchParams): Promise<Page> {
  const id = params.get('run') ?? params.get('runs')?.split(',')[0] ?? '';
  const el = h('section', { class: 'play-page' }, h('h1', {}, 'Play in the browser'));
  if (!id) {
    el.append(errorBox('No run selected: open a run from the Runs table first.'));
    return { el, runs: [] };
  }
  const run = await api.run(id);
  const lora = Number((run.config?.['model'] as { lora?: { rank?: number } } | undefined)?.lora?.rank ?? 0);
  if (run.checkpoints.length === 0) {
    el.append(
      errorBox(
        `${run.summary.name} has no complete checkpoint (checkpoints/step-N/ with config.json, model.safetensors and tokenizer.json); trainer.checkpointEvery sets how often they are written.`,
      ),
    );
    return { el, runs: [id] };
  }
  if (lora > 0) {
    el.append(
      errorBox(
        `${run.summary.name} trains LoRA adapters (model.lora.rank = ${lora}); the browser player loads full checkpoints only.`,
      ),
    );
    return { el, runs: [id] };
  }
  const envs = playableEnvs(run.config);
  const agentRaw = (run.config?.['agent'] ?? {}) as Partial<AgentConfig>;
  const valGen =
    (run.config?.['generation'] as { val?: { temperature?: number; greedy?: boolean } } | undefined)?.val ?? {};
  const stepSel = h(
    'select',
    { id: 'play-step' },
    run.checkpoints.map((s) =>
      h('option', { value: s, selected: s === run.checkpoints.at(-1) }, `checkpoint step ${s}`),
    ),
  );
  const envSel = h(
    'select',
    { id: 'play-env' },
    envs.map((e) => h('option', { value: e.tag }, e.tag)),
  );
  const seedIn = h('input', { type: 'number', id: 'play-seed', value: 123, style: { width: '6em' } });
  const tempIn = h('input', {
    type: 'number',
    id: 'play-temp',
    step: 0.1,
    min: 0,
    value: valGen.greedy ? 0 : (valGen.temperature ?? 0.5),
    style: { width: '5em' },
  });
  const paceSel = h(
    'select',
    { id: 'play-pace', title: 'pause before each turn, to watch the board change' },
    [0, 300, 1000].map((ms) =>
      h('option', { value: ms, selected: ms === 300 }, ms === 0 ? 'no pause' : `${ms} ms / turn`),
    ),
  );
  const playBtn = h('button', { id: 'play-button' }, 'Play an episode');
  const status = h(
    'p',
    { id: 'play-status', class: 'muted' },
    'The model runs in this page (WebAssembly); nothing is computed on the server.',
  );
  const turns = h('div', { id: 'play-turns' });
  const board = h('pre', { class: 'board', id: 'play-board' });
  el.append(
    h('p', { class: 'muted' }, run.summary.name),
    h(
      'div',
      { class: 'toolbar' },
      stepSel,
      envSel,
      h('label', {}, 'seed ', seedIn),
      h('label', {}, 'temperature ', tempIn),
      paceSel,
      playBtn,
    ),
    status,
    h(
      'div',
      { class: 'play-layout' },
      h('div', {}, h('h2', {}, 'Board'), board),
      h('div', {}, h('h2', {}, 'Turns'), turns),
    ),
  );
  let loaded: Loaded | null = null;

  const play = async () => {
    playBtn.disabled = true;
    turns.replaceChildren();
    board.textContent = '';
    try {
      const step = Number(stepSel.value);
      if (loaded?.step !== step) {
        status.textContent = `Loading checkpoint step ${step} into the WASM engine...`;
        await nextFrame();
        loaded = await loadCheckpoint(run, step);
      }
      const { model, tokenizer, vision } = loaded;
      const agent = agentConfig(agentRaw);
      const env = envs.find((e) => e.tag === envSel.value)!;
      const temperature = Number(tempIn.value);
      const seed = Number(seedIn.value);
      const groups = new EnvGroups({
        tags: [{ env: env.tag, nGroups: 1, config: env.config }],
        groupSize: 1,
        mode: 'val',
        seed,
      });
      let pending: HTMLElement | null = null;
      const pad = tokenizer.tokenToId(IMAGE_PAD);
      const policy: Policy = {
        name: 'model(wasm, browser)',
        // with a processor the rollout shows each turn's images to the model as vision tokens
        ...(vision ? { vision: vision.processor } : {}),
        async generate(requests, call) {
          const req = requests[0]!;
          board.textContent = req.slot.env.render();
          // the observation's images ride on this turn's user message, the last of the prompt's messages
          const images = req.messages?.at(-1)?.images ?? [];
          pending = h(
            'div',
            { class: 'turn play-turn', 'data-turn': req.turn },
            h('h4', {}, `Turn ${req.turn + 1}`),
            observationCanvases(images),
            h('pre', { class: 'observation' }, board.textContent),
            h('p', { class: 'muted' }, 'thinking...'),
          );
          turns.append(pending);
          status.textContent = `Turn ${req.turn + 1}: generating...`;
          await new Promise((r) => setTimeout(r, req.turn === 0 ? 0 : Number(paceSel.value)));
          const sampling = {
            maxNewTokens: agent.maxNewTokens,
            temperature,
            ...stopSettings(tokenizer, agent),
            seed: (Math.imul(seed, 0x9e3779b1) ^ Math.imul(call + 1, 0x85ebca6b)) >>> 0,
            decode: (ids: number[]) => tokenizer.decode(ids),
          };
          const prompts = requests.map((r) => r.prompt);
          // a prompt with vision tokens reads its messages' images, in order
          const inputs = requests.map((r): VisionInput | undefined => {
            const shown = r.messages?.flatMap((m) => m.images ?? []) ?? [];
            if (!vision || pad === undefined || !r.prompt.includes(pad) || shown.length === 0) return undefined;
            const pv = pixelValues(shown, vision.processor);
            return { pixels: pv.data, grids: pv.grids };
          });
          const out = vision ? generateVL(vision.model, prompts, inputs, sampling) : generate(model, prompts, sampling);
          pending.lastElementChild!.replaceWith(h('pre', { class: 'response' }, tokenizer.decode(out[0]!.tokens)));
          return out;
        },
      };
      let episode: Episode;
      try {
        episode = (await rollout({ groups, policy, tokenizer, agent })).episodes[0]!;
        board.textContent = groups.slots[0]!.env.render();
      } finally {
        await groups.close();
      }
      // Fill in what the env made of each turn.
      episode.turns.forEach((t, i) => {
        const card = turns.children[i];
        card?.append(
          h('div', { class: 'label' }, 'reasoning'),
          h('pre', { class: 'think' }, t.loop?.think || '(none)'),
          h('div', { class: 'label' }, 'actions'),
          h(
            'pre',
            { class: 'actions' },
            (t.loop?.actions ?? [])
              .filter((a) => a.executed)
              .map((a) => a.action)
              .join(' || ') || '(no valid action)',
          ),
          h('p', {}, `reward ${fmt(t.reward)}${t.penalty ? `, format penalty ${fmt(t.penalty)}` : ''}`),
        );
      });
      status.textContent = `Episode finished: ${episode.success ? 'success' : 'failure'}, reward ${fmt(episode.envReturn)}, ${episode.turns.length} turn(s), ended ${episode.endReason} (engine: ${getBackend().name} in this page${vision ? ', a vision-language model reading the images' : ''}).`;
      status.dataset['done'] = episode.success ? 'success' : 'failure';
    } catch (err) {
      status.replaceChildren(errorBox(`Playing failed: ${(err as Error).message}`));
      status.dataset['done'] = 'error';
    } finally {
      playBtn.disabled = false;
    }
  };
  playBtn.addEventListener('click', () => void play());
  return { el, runs: [id] };
}
