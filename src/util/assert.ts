// assert() for internal invariants (bugs), with a lazily built message.

/** Throws an Error with `message()` when `cond` is false. For invariants, not for user input. */
export function assert(cond: unknown, message: string | (() => string) = 'assertion failed'): asserts cond {
  if (!cond) throw new Error(typeof message === 'string' ? message : message());
}

/** Compile-time exhaustiveness check for `switch` over a union. */
export function assertNever(x: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(x)}`);
}
