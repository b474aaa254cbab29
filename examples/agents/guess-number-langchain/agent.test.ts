// The LangChain.js example end to end through the gateway (examples/agents/e2e.ts): the same prompts as the AI SDK
// agent, trained on what was sampled, rewarded; one greedy episode on models/guess-number-tiny.
import { guessNumberAgentSuite } from '../e2e.js';

guessNumberAgentSuite('langchain', 'LangChain.js');
