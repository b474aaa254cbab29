// The verifier of examples/mcp-calculator: reward 1 when the last number of the final answer is the task's target.
// The MCP env calls it with {task, calls, answer, seed, mode} when the model answers without a tool call.
export function verify({ task, answer }) {
  const last = answer.match(/-?\d+(?:\.\d+)?/g)?.at(-1);
  const success = last !== undefined && Math.abs(Number(last) - task.target) < 1e-9;
  return { reward: success ? 1 : 0, success };
}
