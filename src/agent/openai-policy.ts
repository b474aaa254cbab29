// A policy behind any OpenAI-compatible endpoint (a hosted API, vLLM, SGLang, `ragen serve`), through the
// official `openai` client: bounded concurrency, retries with backoff on 429/5xx/timeouts (each logged),
// token usage per episode. `completions` sends the exact prompt ids and keeps the returned token ids. max_tokens is
// fitted to the server's context when GET /models reports it (vLLM's and `ragen serve`'s `max_model_len`).
import OpenAI from 'openai';
import type { Generation } from '../engine/index.js';
import { IMAGE_PLACEHOLDER, type ChatMessage, type Tokenizer } from '../tokenizer/index.js';
import { encodePng, UsageError } from '../util/index.js';
import type { AgentConfig } from './config.js';
import type { Policy, PolicyRequest } from './policies.js';
import { prefillText } from './prompt.js';

/** Settings of `openaiPolicy`. */
export interface OpenAIPolicyOptions {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseURL: string;
  /** The model id the endpoint serves. */
  model: string;
  /** Sent as `Authorization: Bearer`; local servers often need none. @default 'none' */
  apiKey?: string;
  /**
   * 'chat': the episode's messages to /chat/completions (any chat model; the reply is re-tokenized with our
   * tokenizer). 'completions': the exact prompt ids (template + prefill) to /completions, keeping the sampled
   * token ids and log-probs the server returns (`return_token_ids`, vLLM and `ragen serve`): token-exact.
   * @default 'chat'
   */
  api?: 'chat' | 'completions';
  /** 0 = greedy. @default 1 */
  temperature?: number;
  topP?: number;
  /** Base seed; request j of call i sends a seed derived from (seed, i, j). @default 0 */
  seed?: number;
  /** Requests in flight at once. @default 16 */
  concurrency?: number;
  /** Retries of a request after a 429, a 5xx, a timeout or a connection error. @default 4 */
  maxRetries?: number;
  /** Per-request timeout. @default 120000 */
  timeoutMs?: number;
  /** First backoff; doubles per retry (a Retry-After header wins). @default 500 */
  backoffMs?: number;
  /** One line per retry. @default console.error */
  log?: (line: string) => void;
}

/** Tokens the endpoint reported for one episode (summed over its turns). */
export interface EpisodeUsage {
  promptTokens: number;
  completionTokens: number;
  requests: number;
  retries: number;
}

/** A Policy over an OpenAI-compatible endpoint, with `usage` per episode (slot index). */
export interface OpenAIPolicy extends Policy {
  readonly usage: Map<number, EpisodeUsage>;
}

/** Play through an OpenAI-compatible endpoint (see OpenAIPolicyOptions). */
export function openaiPolicy(tokenizer: Tokenizer, cfg: AgentConfig, o: OpenAIPolicyOptions): OpenAIPolicy {
  const client = new OpenAI({
    baseURL: o.baseURL,
    apiKey: o.apiKey ?? 'none',
    maxRetries: 0,
    timeout: o.timeoutMs ?? 120_000,
  });
  const api = o.api ?? 'chat';
  const limit = limiter(o.concurrency ?? 16);
  const log = o.log ?? ((line: string) => console.error(line));
  const usage = new Map<number, EpisodeUsage>();
  const prefill = prefillText(cfg);
  let context: Promise<number | null> | undefined;
  const contextLength = () => (context ??= serverContext(client, o, log));

  const withRetries = async <T>(what: string, slot: number, fn: () => Promise<T>): Promise<T> => {
    const max = o.maxRetries ?? 4;
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const status = (err as { status?: number }).status;
        const retryable =
          err instanceof OpenAI.APIConnectionError ||
          status === 408 ||
          status === 409 ||
          status === 429 ||
          (status !== undefined && status >= 500);
        if (!retryable || attempt >= max) throw explain(err, o);
        const after = Number((err as { headers?: Headers }).headers?.get?.('retry-after'));
        const wait =
          Number.isFinite(after) && after > 0
            ? after * 1000
            : (o.backoffMs ?? 500) * 2 ** attempt * (0.75 + 0.5 * Math.random());
        entry(usage, slot).retries++;
        log(
          `[openai] ${what}: ${status ?? 'connection'} ${(err as Error).message.split('\n')[0]}; retry ${attempt + 1}/${max} in ${Math.round(wait)} ms`,
        );
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  };

  const one = async (r: PolicyRequest, call: number, j: number): Promise<Generation> => {
    const seed =
      o.temperature === 0
        ? undefined
        : (Math.imul((o.seed ?? 0) ^ 0x2545f491, 0x9e3779b1) +
            Math.imul(call + 1, 0x85ebca6b) +
            Math.imul(j + 1, 0xc2b2ae35)) >>>
          0;
    // A prompt near the context's end gets fewer new tokens instead of a 400 (the server counts prompt + max_tokens).
    const ctx = await contextLength();
    const maxTokens = ctx === null ? cfg.maxNewTokens : Math.max(1, Math.min(cfg.maxNewTokens, ctx - r.prompt.length));
    const common = {
      model: o.model,
      max_tokens: maxTokens,
      temperature: o.temperature ?? 1,
      ...(o.topP !== undefined ? { top_p: o.topP } : {}),
      ...(seed !== undefined ? { seed } : {}),
    };
    const what = `episode ${r.slot.index} turn ${r.turn}`;
    if (api === 'completions') {
      const body = {
        ...common,
        prompt: r.prompt,
        logprobs: 0,
        return_token_ids: true,
        ...(cfg.stopAtAnswer ? { stop: ['</answer>'] } : {}),
      };
      const res = (await limit(() =>
        withRetries(what, r.slot.index, () =>
          client.completions.create(body as OpenAI.CompletionCreateParamsNonStreaming),
        ),
      )) as OpenAI.Completion;
      count(usage, r.slot.index, res.usage);
      const c = res.choices[0];
      if (!c) throw new Error(`${o.baseURL} answered ${what} with no choices`);
      const ids = (c as unknown as { token_ids?: number[] }).token_ids;
      const finishReason = c.finish_reason === 'length' ? 'length' : 'stop';
      if (ids) {
        const lps = c.logprobs?.token_logprobs;
        return {
          tokens: ids,
          logprobs: lps && lps.length === ids.length ? lps.map((x) => x ?? 0) : ids.map(() => 0),
          finishReason,
        };
      }
      // No token ids from this server: our tokenizer's reading of the text (not token-exact).
      return textGeneration(
        c.text + (cfg.stopAtAnswer && finishReason === 'stop' && !c.text.includes('</answer>') ? '</answer>' : ''),
        finishReason,
        tokenizer,
        cfg.stopAtAnswer,
      );
    }
    if (!r.messages) throw new Error('openaiPolicy (chat) needs PolicyRequest.messages: run it through `rollout`');
    const stop = cfg.stopAtAnswer ? { stop: ['</answer>'] } : {};
    const body = { ...common, ...stop, messages: r.messages.map(chatMessageParam) };
    const res = (await limit(() =>
      withRetries(what, r.slot.index, () =>
        client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming),
      ),
    )) as OpenAI.ChatCompletion;
    count(usage, r.slot.index, res.usage);
    const c = res.choices[0];
    if (!c) throw new Error(`${o.baseURL} answered ${what} with no choices`);
    // The model writes the tags itself; the loop has already prefilled the opening one.
    let text = c.message.content ?? '';
    const lead = text.trimStart();
    if (lead.startsWith(prefill)) text = lead.slice(prefill.length);
    const finishReason = c.finish_reason === 'length' ? 'length' : 'stop';
    if (cfg.stopAtAnswer) text = cutAtAnswer(prefill + text, finishReason).slice(prefill.length);
    return textGeneration(text, finishReason, tokenizer, true);
  };

  return {
    name: `openai(${o.model}@${o.baseURL}, ${api})`,
    usage,
    generate: (requests, call) => Promise.all(requests.map((r, j) => one(r, call, j))),
  };
}

/**
 * A message as the chat API takes it: text as a string; with images, text and `image_url` parts in order, each image
 * a PNG data: URL (OpenAI's inline form, which servers that fetch nothing accept too).
 */
export function chatMessageParam(m: ChatMessage): { role: string; content: string | ContentPart[] } {
  if (!m.images || m.images.length === 0) return { role: m.role, content: m.content };
  const pieces = m.content.split(IMAGE_PLACEHOLDER);
  if (pieces.length - 1 !== m.images.length)
    throw new Error(
      `A ${m.role} message has ${pieces.length - 1} image placeholders for ${m.images.length} images (a bug in the prompt builder).`,
    );
  const parts: ContentPart[] = [];
  pieces.forEach((text, i) => {
    if (text !== '') parts.push({ type: 'text', text });
    const image = m.images![i];
    if (image)
      parts.push({
        type: 'image_url',
        image_url: { url: `data:image/png;base64,${Buffer.from(encodePng(image)).toString('base64')}` },
      });
  });
  return { role: m.role, content: parts };
}

type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/**
 * The reply up to its first `</answer>`, as the agent stops there: text a server wrote past it (one that ignores
 * `stop`) does not enter the history. A server that stopped on the sequence leaves it out of the text (OpenAI's
 * rule), so an answer left open by a stop is closed.
 */
export function cutAtAnswer(text: string, finishReason: Generation['finishReason']): string {
  const end = text.indexOf('</answer>');
  if (end >= 0) return text.slice(0, end + '</answer>'.length);
  const open = text.lastIndexOf('<answer>');
  return finishReason === 'stop' && open >= 0 ? `${text}</answer>` : text;
}

/** The context length the server reports for `o.model` in GET /models, or null when it says none. */
async function serverContext(
  client: OpenAI,
  o: OpenAIPolicyOptions,
  log: (line: string) => void,
): Promise<number | null> {
  try {
    for await (const m of client.models.list()) {
      if (m.id !== o.model) continue;
      const card = m as unknown as Record<string, unknown>;
      const n = card.max_model_len ?? card.context_length ?? card.context_window;
      return typeof n === 'number' && n > 0 ? n : null;
    }
    return null;
  } catch (err) {
    log(
      `[openai] GET ${o.baseURL}/models failed (${(err as Error).message.split('\n')[0]}); max_tokens is not fitted to the server's context`,
    );
    return null;
  }
}

/** A reply's text as our tokenizer reads it, log-probs 0, EOS appended when the reply ended on its own. */
function textGeneration(
  text: string,
  finishReason: Generation['finishReason'],
  tokenizer: Tokenizer,
  appendEos: boolean,
): Generation {
  const tokens = tokenizer.encode(text);
  if (finishReason === 'stop' && appendEos) tokens.push(tokenizer.eosTokenId);
  return { tokens, logprobs: tokens.map(() => 0), finishReason };
}

function entry(usage: Map<number, EpisodeUsage>, slot: number): EpisodeUsage {
  let u = usage.get(slot);
  if (!u) usage.set(slot, (u = { promptTokens: 0, completionTokens: 0, requests: 0, retries: 0 }));
  return u;
}

function count(
  usage: Map<number, EpisodeUsage>,
  slot: number,
  u: { prompt_tokens: number; completion_tokens: number } | undefined,
): void {
  const e = entry(usage, slot);
  e.requests++;
  e.promptTokens += u?.prompt_tokens ?? 0;
  e.completionTokens += u?.completion_tokens ?? 0;
}

/** A failure that retries did not fix, said as the endpoint said it, with what to check. */
function explain(err: unknown, o: OpenAIPolicyOptions): Error {
  const status = (err as { status?: number }).status;
  const msg = ((err as Error).message ?? String(err)).replace(/^\d{3} /, ''); // the client prefixes the status
  if (err instanceof OpenAI.APIConnectionError)
    return new UsageError(`Cannot reach ${o.baseURL} (${msg}); check --base-url and that the server runs.`);
  if (status === 401 || status === 403)
    return new UsageError(
      `${o.baseURL} refused the API key (${status}: ${msg}); pass --api-key or set OPENAI_API_KEY.`,
    );
  if (status === 404)
    return new UsageError(
      `${o.baseURL} answered 404 (${msg}); check --model \`${o.model}\` (GET ${o.baseURL}/models lists the served ids).`,
    );
  if (status !== undefined && status < 500)
    return new UsageError(`${o.baseURL} refused the request (${status}: ${msg}).`);
  return err instanceof Error ? err : new Error(msg);
}

/** Run at most `n` of the given tasks at once. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async (task) => {
    if (active >= n) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await task();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
