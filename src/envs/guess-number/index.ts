// Registers `GuessNumber`: find a hidden number from higher/lower answers (the AI SDK example's task in the built-in
// loop).
import { registerEnv } from '../../env/index.js';
import {
  binarySearchGuesses,
  GuessNumberEnv,
  guessNumberSchema,
  guessNumberSecret,
  type GuessNumberConfig,
} from './guess-number.js';

export {
  binarySearchGuesses,
  GuessNumberEnv,
  guessNumberSchema,
  guessNumberSecret,
  type GuessNumberConfig,
} from './guess-number.js';

registerEnv<GuessNumberConfig>('GuessNumber', {
  description: 'Guess the number: find a hidden number in 1..16 from higher/lower answers, 5 guesses (multi-turn).',
  schema: guessNumberSchema,
  create: (config) => new GuessNumberEnv(config),
  maxActionsPerEpisode: 5,
  /** Binary search; it fails only when maxGuesses is below ceil(log2(maxNumber + 1)). */
  solve: (config, seed) => binarySearchGuesses(guessNumberSecret(seed, config.maxNumber), config.maxNumber).map(String),
  solverMayFail: (config) => 2 ** config.maxGuesses <= config.maxNumber,
});
