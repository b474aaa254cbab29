// The judging benchmark behind `ragen bench sandbox`: DeepCoder's reference solutions run through the
// sandbox, timed; every one must pass, so the run doubles as the check that all references score 100%.
import { Sandbox, type Isolation } from '../sandbox/index.js';
import { assembleProgram, generateProblems, testPassed } from '../envs/index.js';

/** Options of {@link benchJudge}. */
export interface JudgeBenchOptions {
  /** Problems judged (the first n of the set). @default 400 */
  problems?: number;
  /** Programs run at once. @default 2 */
  parallel?: number;
  /** @default 'bwrap' */
  isolation?: Isolation;
  /** Called after each judged program. */
  onProgress?: (done: number, total: number) => void;
}

/** What one benchmark pass measured. */
export interface JudgeBenchResult {
  isolation: Isolation;
  parallel: number;
  programs: number;
  tests: number;
  /** Reference solutions that passed every test (must equal `programs`). */
  programsPassed: number;
  /** The ids of references that failed a test, with the first failure. */
  failures: string[];
  seconds: number;
  programsPerSecond: number;
  testsPerSecond: number;
  /** Per-program wall time (spawn to exit), milliseconds. */
  p50Ms: number;
  p95Ms: number;
}

/** Judge the reference solutions of the first `problems` problems and time it. */
export async function benchJudge(options: JudgeBenchOptions = {}): Promise<JudgeBenchResult> {
  const isolation = options.isolation ?? 'bwrap';
  const parallel = options.parallel ?? 2;
  const problems = generateProblems(Math.max(20, options.problems ?? 400)).slice(0, options.problems ?? 400);
  const sandbox = new Sandbox({ isolation, maxParallel: parallel });
  await sandbox.check();
  const latencies: number[] = [];
  const failures: string[] = [];
  let tests = 0;
  let done = 0;
  const start = performance.now();
  await Promise.all(
    problems.map(async (p) => {
      const program = assembleProgram(p.reference, p);
      if (!program.ok) throw new Error(`the reference of ${p.id} does not assemble: ${program.reason}`);
      const run = await sandbox.run({
        code: program.code,
        style: p.style,
        ...(p.functionName ? { functionName: p.functionName } : {}),
        inputs: p.tests.map((t) => t.input),
      });
      latencies.push(run.wallSeconds * 1000);
      tests += p.tests.length;
      const bad = p.tests.findIndex((t, i) => !testPassed(run.tests[i]!, t.output, p.style));
      if (bad >= 0)
        failures.push(
          `${p.id} test ${bad + 1}: ${run.tests[bad]!.error ?? `printed ${JSON.stringify(run.tests[bad]!.output.slice(0, 80))}`}`,
        );
      options.onProgress?.(++done, problems.length);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    isolation,
    parallel,
    programs: problems.length,
    tests,
    programsPassed: problems.length - failures.length,
    failures,
    seconds,
    programsPerSecond: problems.length / seconds,
    testsPerSecond: tests / seconds,
    p50Ms: pct(0.5),
    p95Ms: pct(0.95),
  };
}
