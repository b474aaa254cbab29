// Types of task.mjs for the TypeScript that imports it (sft.ts, the tests).
export declare const MAX_NUMBER: number;
export declare const MAX_GUESSES: number;
export declare const PROMPT: string;
export declare const GUESS_TOOL: { description: string; parameters: Record<string, unknown> };
export declare function secretOf(seed: number, maxNumber?: number): number;
export declare function answer(n: unknown, secret: number): string;
