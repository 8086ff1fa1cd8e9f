// Shared by the scenario scripts: the official openai client pointed at a running `tern serve`, the single-sequence
// reference (`tern generate`), and small helpers. The server comes from the environment the C++ test sets:
// TERN_BASE_URL, TERN_MODEL_NAME (the served name), TERN_MODEL_PATH (the GGUF file) and TERN_BINARY.
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (the scripts run under the e2e_serve_node_test ctest tests)`);
  return value;
}

export const baseURL = required('TERN_BASE_URL');
export const modelName = required('TERN_MODEL_NAME');
export const modelPath = required('TERN_MODEL_PATH');
export const ternBinary = required('TERN_BINARY');

export const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-needed', maxRetries: 0, timeout: 60_000 });

// `tern generate --temp 0`: the greedy continuation of `prompt`, as { tokens, text, finish_reason, prompt_tokens }.
export function ternGenerate(prompt, numTokens) {
  const args = ['generate', '--json', '--temp', '0', '-n', String(numTokens), '-m', modelPath, '-p', prompt];
  return JSON.parse(execFileSync(ternBinary, args, { encoding: 'utf8', maxBuffer: 1 << 24 }));
}

// The prompt token count the server's /tokenize reports for `text` (special tokens such as BOS included).
export async function tokenCount(text) {
  const response = await fetch(`${baseURL}/tokenize`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: text }),
  });
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.count, body.tokens.length);
  return body.count;
}

// The token counts of a usage object. Its prompt_tokens_details.cached_tokens (prompt tokens from the prefix cache)
// is checked for range and left out, since it depends on what earlier requests left in the cache.
export function usageCounts(usage) {
  const { prompt_tokens_details: details, ...counts } = usage;
  assert.ok(Number.isInteger(details?.cached_tokens), `cached_tokens in ${JSON.stringify(usage)}`);
  assert.ok(details.cached_tokens >= 0 && details.cached_tokens <= usage.prompt_tokens, JSON.stringify(usage));
  return counts;
}

// The chat prompt of a model without a chat template: "role: content\n" per message, then "assistant:".
export function fallbackChatPrompt(messages) {
  return messages.map((message) => `${message.role}: ${message.content}\n`).join('') + 'assistant:';
}

// Reads a streamed completion or chat completion into per-choice text, logprobs and finish reasons, checking the
// chunk shape on the way; `usage` is the usage chunk's, when asked for.
export async function collect(stream, { chat }) {
  const choices = new Map();
  let usage = null;
  let numChunks = 0;
  for await (const chunk of stream) {
    ++numChunks;
    assert.equal(chunk.object, chat ? 'chat.completion.chunk' : 'text_completion');
    if (chunk.usage) {
      assert.equal(usage, null, 'one usage chunk');
      assert.equal(chunk.choices.length, 0, 'the usage chunk carries no choice');
      usage = chunk.usage;
      continue;
    }
    for (const choice of chunk.choices) {
      if (!choices.has(choice.index)) choices.set(choice.index, { text: '', logprobs: [], finish_reason: null });
      const entry = choices.get(choice.index);
      assert.equal(entry.finish_reason, null, 'nothing follows a choice\'s finish_reason');
      entry.text += chat ? (choice.delta.content ?? '') : choice.text;
      if (chat && choice.logprobs) entry.logprobs.push(...choice.logprobs.content);
      if (!chat && choice.logprobs) entry.logprobs.push(...completionLogprobs(choice.logprobs));
      if (choice.finish_reason) entry.finish_reason = choice.finish_reason;
    }
  }
  assert.ok(numChunks > 0);
  return { choices: [...choices.entries()].sort((a, b) => a[0] - b[0]).map(([, entry]) => entry), usage };
}

// Completions' parallel logprob arrays as chat's list of { token, logprob, top_logprobs: [{ token, logprob }] }.
export function completionLogprobs(logprobs) {
  return logprobs.tokens.map((token, idx) => ({
    token,
    logprob: logprobs.token_logprobs[idx],
    top_logprobs: Object.entries(logprobs.top_logprobs[idx]).map(([text, logprob]) => ({ token: text, logprob })),
  }));
}

// Runs the scenario; any failed assertion or error ends the process with status 1 and the reason.
export function main(scenario) {
  scenario().then(
    () => console.log('ok'),
    (error) => {
      console.error(error.stack ?? String(error));
      process.exit(1);
    },
  );
}
