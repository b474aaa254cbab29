// The teacher of on-policy distillation (`algo.distill`): per-token log-probs of the student's own sampled rows under
// a model directory (a local engine's teacher-forced pass) or an OpenAI-compatible server (legacy completions with
// `echo` and `logprobs`, which `ragen serve` answers), after its tokenizer is checked against the student's.
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import { LocalEngine, type Engine, type SequenceBatch } from '../engine/index.js';
import { resolveModelPath } from '../model/index.js';
import type { ChatMessage, Tokenizer } from '../tokenizer/index.js';
import { ConfigError, RagenError } from '../util/index.js';
import type { RagenConfig } from '../config/index.js';
import { openModelDir } from './checkpoint-read.js';
import { modelTokenizer } from './engine-setup.js';

/** What the distillation stage asks of a teacher. */
export interface Teacher {
  /** Where it came from (`algo.distill.teacher`, resolved), for messages. */
  readonly source: string;
  /**
   * log p_teacher(token t | tokens < t) of every row, token-aligned (B, T) like `ForwardResult.logprobs`: entry (b, 0)
   * and padding are 0.
   */
  logprobs(batch: SequenceBatch): Promise<Float32Array>;
  dispose(): void;
}

/** A conversation both tokenizers render and encode: the ids must agree token for token. */
const PROBE: ChatMessage[] = [
  { role: 'system', content: 'You are an agent. Answer with <answer>Action</answer>.' },
  { role: 'user', content: 'Turn 1:\n#####\n#_P$#\n#__O#\n##### Ünïcödé ✓ 12345, {"json": [true]}' },
  { role: 'assistant', content: '<think>push right</think><answer>Right</answer>' },
  { role: 'user', content: 'Turn 2: reward 1.0' },
];

/** The probe's ids under a tokenizer: its chat template with the generation prompt, encoded. */
export function probeIds(tok: Tokenizer): number[] {
  return tok.encode(tok.applyChatTemplate(PROBE, { addGenerationPrompt: true }));
}

/**
 * Refuse a teacher whose tokenizer or chat template differs from the student's: the teacher scores the student's token
 * ids, which mean the same text only under the same vocabulary. `teacherIds` is the probe under the teacher's.
 */
export function checkSameTokenizer(
  student: Tokenizer,
  teacherIds: readonly number[],
  teacher: string,
  teacherVocab?: number,
): void {
  const mine = probeIds(student);
  const fix =
    'The teacher scores the student’s token ids, so both must share one tokenizer and chat template: distil from a model of the same family (same tokenizer.json and template), or serve the teacher with the student’s.';
  const what = `Bad config value \`algo.distill.teacher\` = ${JSON.stringify(teacher)}:`;
  if (teacherVocab !== undefined && teacherVocab !== student.vocabSize)
    throw new ConfigError(
      `${what} its tokenizer has ${teacherVocab} tokens, the student's has ${student.vocabSize}. ${fix}`,
    );
  const n = Math.min(mine.length, teacherIds.length);
  let i = 0;
  while (i < n && mine[i] === teacherIds[i]) i++;
  if (i === n && mine.length === teacherIds.length) return;
  const show = (ids: readonly number[]) =>
    i < ids.length ? `id ${ids[i]} (${JSON.stringify(student.decode([ids[i]!]))})` : 'the end';
  throw new ConfigError(
    `${what} a probe conversation tokenizes differently under the teacher (${teacherIds.length} ids) and the student (${mine.length} ids): at position ${i} the teacher has ${show(teacherIds)}, the student ${show(mine)}. ${fix}`,
  );
}

/** A teacher over an engine's teacher-forced pass (role `policy`), `rows` rows at a time. */
export function engineTeacher(
  engine: Pick<Engine, 'forward'> & { dispose?: () => void },
  source: string,
  rows: number,
): Teacher {
  return {
    source,
    async logprobs(batch) {
      const { B, T } = batch;
      const out = new Float32Array(B * T);
      for (let b0 = 0; b0 < B; b0 += rows) {
        const b1 = Math.min(B, b0 + rows);
        const part: SequenceBatch = {
          B: b1 - b0,
          T,
          ids: batch.ids.subarray(b0 * T, b1 * T),
          attentionMask: batch.attentionMask.subarray(b0 * T, b1 * T),
          lengths: batch.lengths.subarray(b0, b1),
          ...(batch.images ? { images: batch.images.slice(b0, b1) } : {}),
        };
        out.set((await engine.forward(part, { role: 'policy' })).logprobs, b0 * T);
      }
      return out;
    },
    dispose: () => engine.dispose?.(),
  };
}

/** `fetch`'s shape as the server teacher uses it (tests pass their own). */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{
  ok: boolean;
  status: number;
  json(): Promise<unknown>;
  text(): Promise<string>;
}>;

/**
 * A teacher behind an OpenAI-compatible server at `url` (its `/v1` base): each row is sent as token ids to
 * `/completions` with `echo: true, logprobs: 0, max_tokens: 0`, and the prompt's log-probs come back. `concurrency`
 * requests are in flight at once.
 */
export function serverTeacher(o: { url: string; model: string; concurrency: number; fetch?: FetchLike }): Teacher {
  const call = o.fetch ?? (fetch as unknown as FetchLike);
  const base = o.url.replace(/\/+$/, '');
  async function row(ids: number[]): Promise<number[]> {
    const body = await postJson(call, `${base}/completions`, {
      model: o.model,
      prompt: ids,
      max_tokens: 0,
      echo: true,
      logprobs: 0,
      temperature: 0,
    });
    const lp = (body as { choices?: { logprobs?: { token_logprobs?: unknown } }[] }).choices?.[0]?.logprobs
      ?.token_logprobs;
    if (!Array.isArray(lp) || lp.length < ids.length)
      throw new RagenError(
        `The distillation teacher at ${base} did not return the prompt's log-probs (choices[0].logprobs.token_logprobs with ${ids.length} entries, got ${Array.isArray(lp) ? lp.length : JSON.stringify(lp)}). The server must support \`echo\` with \`logprobs\` on /v1/completions, as \`ragen serve\` does.`,
      );
    return ids.map((_, t) => (t === 0 ? 0 : Number(lp[t])));
  }
  return {
    source: base,
    async logprobs(batch) {
      const { B, T } = batch;
      const out = new Float32Array(B * T);
      let next = 0;
      const worker = async () => {
        for (let b = next++; b < B; b = next++) {
          const ids = Array.from(batch.ids.subarray(b * T, b * T + batch.lengths[b]!));
          out.set(await row(ids), b * T);
        }
      };
      await Promise.all(Array.from({ length: Math.min(o.concurrency, B) }, worker));
      return out;
    },
    dispose: () => {},
  };
}

async function postJson(call: FetchLike, url: string, body?: unknown): Promise<unknown> {
  let r;
  try {
    r = await call(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    throw new RagenError(
      `The distillation teacher at ${url} cannot be reached (${(err as Error).message}); start it (e.g. \`ragen serve MODEL --port 8000\`) or fix \`algo.distill.teacher\`.`,
    );
  }
  if (!r.ok)
    throw new RagenError(
      `The distillation teacher answered ${url} with ${r.status}: ${(await r.text()).slice(0, 500)}`,
    );
  return r.json();
}

/** Whether `algo.distill.teacher` names a server rather than a model directory. */
export const isTeacherUrl = (teacher: string): boolean => /^https?:\/\//.test(teacher);

/**
 * The run's teacher (null without `algo.distill.teacher`): a server (its model `serverModel` or the first it lists,
 * its tokenizer checked with a chat request that returns the prompt's ids) or a model directory / shipped model / run
 * checkpoint (opened on a local engine with the run's backend, its tokenizer.json and template checked).
 */
export async function openTeacher(
  config: RagenConfig,
  student: Tokenizer,
  o: { say?: (line: string) => void; fetch?: FetchLike } = {},
): Promise<Teacher | null> {
  const d = config.algo.distill;
  if (d.teacher === null) return null;
  if (isTeacherUrl(d.teacher)) {
    const call = o.fetch ?? (fetch as unknown as FetchLike);
    const base = d.teacher.replace(/\/+$/, '');
    let model = d.serverModel;
    if (model === null) {
      const list = (await postJson(call, `${base}/models`)) as { data?: { id?: unknown }[] };
      const id = list.data?.[0]?.id;
      if (typeof id !== 'string')
        throw new ConfigError(
          `Bad config value \`algo.distill.teacher\` = ${JSON.stringify(d.teacher)}: GET ${base}/models lists no model; set \`algo.distill.serverModel\`.`,
        );
      model = id;
    }
    const chat = (await postJson(call, `${base}/chat/completions`, {
      model,
      messages: PROBE,
      max_tokens: 1,
      temperature: 0,
      return_token_ids: true,
    })) as { prompt_token_ids?: unknown };
    if (!Array.isArray(chat.prompt_token_ids))
      throw new ConfigError(
        `Bad config value \`algo.distill.teacher\` = ${JSON.stringify(d.teacher)}: the server did not return \`prompt_token_ids\` (vLLM's \`return_token_ids\`), so its tokenizer cannot be checked against the student's; serve the teacher with \`ragen serve\` or a vLLM that supports it.`,
      );
    checkSameTokenizer(student, chat.prompt_token_ids as number[], d.teacher);
    o.say?.(`distillation teacher: ${base} (model ${model}); tokenizer and chat template match the student's.`);
    return serverTeacher({ url: base, model, concurrency: d.batchSize, ...(o.fetch ? { fetch: o.fetch } : {}) });
  }
  // `runs/<name>` reads like a Hub id (owner/name); when its folder is a local one, or it lies under
  // `logging.runsDir` (a fresh checkout has no `runs/` yet), the run is what was meant
  const local = resolve(d.teacher);
  const underRuns = local.startsWith(resolve(config.logging.runsDir) + sep);
  if (
    !isAbsolute(d.teacher) &&
    d.teacher.includes('/') &&
    !existsSync(local) &&
    (existsSync(dirname(local)) || underRuns)
  )
    throw new ConfigError(
      `Bad config value \`algo.distill.teacher\` = ${JSON.stringify(d.teacher)}: no directory ${local}. Train the teacher first (e.g. \`ragen train --config sokoban-ppo logging.runDir=${d.teacher}\`), or point it at a run, a checkpoint, a model directory or a server URL.`,
    );
  const dir = openModelDir(await resolveModelPath(d.teacher, { key: 'algo.distill.teacher' }), {
    ...(o.say ? { say: o.say } : {}),
  });
  const tok = modelTokenizer(dir, config.model.chatTemplate);
  checkSameTokenizer(student, probeIds(tok), d.teacher, tok.vocabSize);
  const engine = await LocalEngine.fromPretrained(dir, {
    backend: config.model.backend,
    decode: (ids) => tok.decode(ids),
  });
  const vocab = engine.policy.config.vocabSize;
  if (vocab < student.vocabSize) {
    engine.dispose();
    throw new ConfigError(
      `Bad config value \`algo.distill.teacher\` = ${JSON.stringify(d.teacher)}: its model scores ${vocab} token ids, fewer than the student's tokenizer has (${student.vocabSize}).`,
    );
  }
  o.say?.(`distillation teacher: ${dir}; tokenizer and chat template match the student's.`);
  return engineTeacher(engine, dir, d.batchSize);
}
