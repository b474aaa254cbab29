// Errors of the OpenAI-compatible server, in OpenAI's wire format: {"error": {message, type, param, code}}
// with the HTTP status a client (the official `openai` package) maps to its error classes.

/** One failed request: its HTTP status and OpenAI's error fields. Thrown by parsing, answered by the server. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** OpenAI's `type`: 'invalid_request_error', 'authentication_error', 'rate_limit_error', 'server_error'... */
    readonly type = 'invalid_request_error',
    /** The request field at fault, if one is. */
    readonly param: string | null = null,
    /** A machine-readable code: 'model_not_found', 'context_length_exceeded', 'invalid_api_key'... */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The JSON body OpenAI sends with this error. */
  body(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** 400 naming the field, the value received and what is accepted. */
export function badParam(param: string, value: unknown, accepted: string): ApiError {
  return new ApiError(
    400,
    `Invalid value for \`${param}\`: ${preview(value)}. ${accepted}`,
    'invalid_request_error',
    param,
    'invalid_value',
  );
}

/** A short JSON rendering of a client-sent value for messages (never echo megabytes back). */
export function preview(value: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
