// How a failed step is told: a remote env lost mid-step or non-finite logits name the step, what was saved, and how
// to continue.
import { RemoteEnvError } from '../env/remote/index.js';
import { NonFiniteLogitsError } from '../model/index.js';

/**
 * The step's output; a remote env lost mid-step (its server died, timed out) fails the step with that sentence plus
 * what is safe: nothing of the step was written (no metrics line, rollouts or checkpoint), and `--resume` continues
 * exactly from the last checkpoint once the server is back. Non-finite logits in the step's rollout are named with the
 * step the same way.
 */
export async function stepOrExplain<T>(
  pending: Promise<T>,
  step: number,
  lastCheckpoint: number,
  runDir: string,
): Promise<T> {
  try {
    return await pending;
  } catch (err) {
    if (err instanceof NonFiniteLogitsError) {
      // Nothing is trained on NaN: the step stops at its rollout, and the message says which step.
      err.message = `step ${step} failed: ${err.message} Nothing of step ${step} was saved (${lastCheckpoint > 0 ? `the last checkpoint is step-${lastCheckpoint}` : 'no checkpoint was written yet'}).`;
      throw err;
    }
    if (!(err instanceof RemoteEnvError)) throw err;
    const from =
      lastCheckpoint > 0
        ? `after step ${lastCheckpoint}, its last checkpoint`
        : 'from the start (no checkpoint was written yet)';
    throw new RemoteEnvError(
      err.code,
      `step ${step} failed: ${err.message.replace(/ reset\(\) opens a new session\.$/, '')} Nothing of step ${step} was saved; once the server is back, \`ragen train --resume ${runDir}\` continues ${from}.`,
    );
  }
}
