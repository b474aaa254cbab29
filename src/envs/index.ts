// envs: the built-in environments, one folder each: importing this module registers every one of them, in this order
// (each folder's index.ts calls registerEnv() for its ids when imported).
import './countdown/index.js';
import './bandit/index.js';
import './metamathqa/index.js';
import './sokoban/index.js';
import './sudoku/index.js';
import './game-2048/index.js';
import './rubiks-cube/index.js';
import './frozen-lake/index.js';
import './webshop/index.js';
import './searchqa/index.js';
import './deepcoder/index.js';
import './lean/index.js';
import './mcp/index.js';
import './guess-number/index.js';

// What other folders use of particular environments (imported after every registration above, so ids register in
// this file's order whatever imports it first).
export { startRetrievalServer, HttpRetriever, retrievalRecall } from './searchqa/index.js';
export { binarySearchGuesses, guessNumberSecret } from './guess-number/index.js';
export { assembleProgram, testPassed, generateProblems } from './deepcoder/index.js';
export { generateTheorems } from './lean/index.js';
