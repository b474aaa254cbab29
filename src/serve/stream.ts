// Token-by-token streaming (server-sent events): each choice's tokens go out as the engine samples them, one
// chunk per token with its id and log-prob, text deltas from StreamText; then a finish chunk per choice.
import type { ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Generation } from '../engine/index.js';
import type { ChatRequest, CompletionRequest } from './requests.js';
import { choiceJobs, type HandlerContext } from './handlers.js';
import { chatLogprobs, completionText, usage, type ChoiceResult } from './responses.js';
import { StreamText } from './stream-text.js';

/**
 * Answer a streaming request as its tokens are sampled. The headers go out once the request's limits pass (a bad
 * request still gets its status code); a later failure ends the stream with an error event (the server's `fail`).
 */
export async function streamIncremental(
  ctx: HandlerContext,
  res: ServerResponse,
  req: ChatRequest | CompletionRequest,
  prompts: number[][],
  signal: AbortSignal,
): Promise<void> {
  const jobs = choiceJobs(ctx, req, prompts);
  const chat = req.kind === 'chat';
  const head = {
    id: `${chat ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`,
    object: chat ? 'chat.completion.chunk' : 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: ctx.modelName,
  };
  const send = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}): void => {
    if (!res.destroyed) res.write(`data: ${JSON.stringify({ ...head, choices: [choice], ...extra })}\n\n`);
  };
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const ids = (id: number) => (req.returnTokenIds ? { token_ids: [id] } : {});
  const streamed = jobs.map((job, index) => {
    const text = new StreamText(ctx.tokenizer, ctx.stopTokenIds, req.stop);
    let count = 0;
    let offset = 0; // legacy logprobs' text_offset: the decoded tokens before this one, as the whole response counts them
    if (chat)
      send(
        { index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
        req.returnTokenIds ? { prompt_token_ids: job.prompt } : {},
      );
    const onToken = (id: number, logprob: number): void => {
      const piece = text.push(id);
      const one: Generation = { tokens: [id], logprobs: [logprob], finishReason: 'length' };
      if (chat) {
        const lp = req.logprobs
          ? chatLogprobs(ctx.tokenizer, { index, prompt: job.prompt, gen: one, text: '', top: undefined })
          : null;
        send({ index, delta: { content: piece }, logprobs: lp, finish_reason: null, ...ids(id) });
      } else {
        const token = ctx.tokenizer.decode([id]);
        const lp = req.logprobs
          ? { tokens: [token], token_logprobs: [logprob], top_logprobs: null, text_offset: [offset] }
          : null;
        offset += token.length;
        send({
          index,
          text: piece,
          logprobs: lp,
          finish_reason: null,
          ...ids(id),
          ...(count === 0 && req.returnTokenIds ? { prompt_token_ids: job.prompt } : {}),
        });
      }
      count++;
    };
    return { job: { ...job, onToken }, text };
  });
  const gens = ctx.batcher.submitAll(
    streamed.map((s) => s.job),
    signal,
  ); // one abort listener for all choices
  const results = gens.map(async (pending, index): Promise<ChoiceResult> => {
    const gen = await pending;
    const whole = completionText(ctx.tokenizer, gen, ctx.stopTokenIds, req.stop);
    const rest = streamed[index]!.text.finish(whole);
    send({
      index,
      ...(chat ? { delta: rest ? { content: rest } : {} } : { text: rest }),
      logprobs: null,
      finish_reason: gen.finishReason,
    });
    return { index, prompt: jobs[index]!.prompt, gen, text: whole, top: undefined };
  });
  const choices = await Promise.all(results);
  if (req.includeUsage && !res.destroyed)
    res.write(`data: ${JSON.stringify({ ...head, choices: [], usage: usage(prompts, choices) })}\n\n`);
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}
