// The verifier (written by `ragen new mcp`): reward 1 when the final answer's last number is the task's target and
// the model read the file through the server first (an answer without a successful read_text_file call scores 0).
// The MCP env calls it with {task, calls, answer, seed, mode} when the model answers without a tool call.
export function verify({ task, calls, answer }) {
  const read = calls.some((c) => c.name === 'read_text_file' && !c.isError);
  const last = answer.match(/-?\d+/g)?.at(-1);
  const success = read && last !== undefined && Number(last) === task.target;
  return { reward: success ? 1 : 0, success };
}
