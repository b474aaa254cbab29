// Reading a request body as JSON under a byte limit (413 over it, 400 on bad JSON), shared by `ragen serve` and
// the training gateway so that neither trusts a client's size or syntax.
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.js';

/** The request body as JSON, refusing bodies over `max` bytes (413) and bad JSON (400). */
export function readJsonBody(req: IncomingMessage, max: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.reject(tooLarge(declared, max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > max) {
        done = true;
        chunks.length = 0;
        reject(tooLarge(size, max));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(JSON.parse(text));
      } catch (err) {
        reject(
          new ApiError(
            400,
            `The request body is not valid JSON (${(err as Error).message}); send a JSON object with Content-Type: application/json.`,
            'invalid_request_error',
            null,
            'invalid_json',
          ),
        );
      }
    });
    req.on('aborted', () => {
      if (!done) {
        done = true;
        reject(new ApiError(400, 'The client closed the connection before the body was complete.'));
      }
    });
  });
}

function tooLarge(size: number, max: number): ApiError {
  return new ApiError(
    413,
    `The request body is ${size} bytes or more, over this server's limit of ${max} bytes (--max-body-bytes).`,
    'invalid_request_error',
    null,
    'request_too_large',
  );
}
