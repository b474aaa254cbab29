// Chat templates we ship: ChatML for our tiny tokenizer, Qwen2.5-Instruct's template (the model family RAGEN
// trains), and our own append-only Qwen templates (`ragen-qwen`) that `ragen model init` writes and the Qwen presets
// fall back to when a model's own template rewrites history (Qwen3's drops earlier <think> reasoning).

/**
 * ChatML, as Qwen2.5 writes it but without a default system prompt: every message is
 * `<|im_start|>{role}\n{content}<|im_end|>\n`, and the generation prompt is `<|im_start|>assistant\n`.
 * Append-only: rendering n+1 messages extends the rendering of n (the agent loop relies on it).
 */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/** Qwen2.5-Instruct's default system prompt, shown when a conversation opens without a system message. */
export const QWEN25_DEFAULT_SYSTEM = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.';

/**
 * Our append-only template with Qwen2.5's rendering: every message `<|im_start|>{role}\n{content}<|im_end|>\n`,
 * history verbatim (earlier assistant turns keep their <think> text), Qwen2.5's default system prompt when the
 * first message is not a system one, and `<|im_start|>assistant\n` as the generation prompt. It never raises (no
 * "no user query found"), and rendering n+1 messages always extends the rendering of n. Any role renders the same way
 * (a `tool` message as `<|im_start|>tool`, where Qwen2.5's own template wraps it in <tool_response> under `user`).
 */
export const RAGEN_QWEN25_TEMPLATE =
  "{%- if messages | length == 0 or messages[0].role != 'system' %}{{- '<|im_start|>system\\n" +
  QWEN25_DEFAULT_SYSTEM +
  "<|im_end|>\\n' }}{%- endif %}" +
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/**
 * The same append-only rendering for the Qwen3 family, which has no default system prompt: Qwen3's own template
 * strips `<think>` blocks from assistant turns before the last user message, this one keeps them verbatim.
 */
export const RAGEN_QWEN3_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/**
 * Qwen2.5-Instruct's chat template (tools branch included), as published with the model's
 * tokenizer_config.json. Without a system message it inserts Qwen's default one.
 */
export const QWEN25_CHAT_TEMPLATE = `{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
`;
