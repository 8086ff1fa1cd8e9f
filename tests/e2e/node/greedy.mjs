// Greedy output through the openai client equals `tern generate --temp 0`: completions and chat, whole and
// streamed, with the usage figures of the same run (chat uses the fallback format of a model without a template).
import assert from 'node:assert/strict';
import {
  client, collect, fallbackChatPrompt, main, modelName, tokenCount, ternGenerate, usageCounts,
} from './common.mjs';

const kPrompts = ['Once upon a time', 'The little dog'];
const kMaxTokens = 24;

async function checkCompletions(prompt) {
  const reference = ternGenerate(prompt, kMaxTokens);
  const numPromptTokens = await tokenCount(prompt);
  assert.equal(numPromptTokens, reference.prompt_tokens.length, `/tokenize agrees with tern generate on '${prompt}'`);
  const request = { model: modelName, prompt, max_tokens: kMaxTokens, temperature: 0 };

  const whole = await client.completions.create(request);
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.model, modelName);
  assert.equal(whole.choices.length, 1);
  assert.equal(whole.choices[0].text, reference.text, `completion of '${prompt}'`);
  assert.equal(whole.choices[0].finish_reason, reference.finish_reason);
  assert.deepEqual(usageCounts(whole.usage), {
    prompt_tokens: numPromptTokens,
    completion_tokens: reference.tokens.length,
    total_tokens: numPromptTokens + reference.tokens.length,
  });

  const stream = await client.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  const streamed = await collect(stream, { chat: false });
  assert.equal(streamed.choices.length, 1);
  assert.equal(streamed.choices[0].text, reference.text, `streamed completion of '${prompt}'`);
  assert.equal(streamed.choices[0].finish_reason, reference.finish_reason);
  assert.deepEqual(usageCounts(streamed.usage), usageCounts(whole.usage));
}

async function checkChat(prompt) {
  const messages = [{ role: 'user', content: prompt }];
  const reference = ternGenerate(fallbackChatPrompt(messages), kMaxTokens);
  const request = { model: modelName, messages, max_tokens: kMaxTokens, temperature: 0 };

  const whole = await client.chat.completions.create(request);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices.length, 1);
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.equal(whole.choices[0].message.content, reference.text, `chat reply to '${prompt}'`);
  assert.equal(whole.choices[0].finish_reason, reference.finish_reason);
  assert.deepEqual(usageCounts(whole.usage), {
    prompt_tokens: reference.prompt_tokens.length,
    completion_tokens: reference.tokens.length,
    total_tokens: reference.prompt_tokens.length + reference.tokens.length,
  });

  // max_completion_tokens is chat's newer name for max_tokens.
  const stream = await client.chat.completions.create({
    model: modelName, messages, max_completion_tokens: kMaxTokens, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  const streamed = await collect(stream, { chat: true });
  assert.equal(streamed.choices.length, 1);
  assert.equal(streamed.choices[0].text, reference.text, `streamed chat reply to '${prompt}'`);
  assert.equal(streamed.choices[0].finish_reason, reference.finish_reason);
  assert.deepEqual(usageCounts(streamed.usage), usageCounts(whole.usage));
}

main(async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((model) => model.id), [modelName]);
  for (const prompt of kPrompts) {
    await checkCompletions(prompt);
    await checkChat(prompt);
  }
});
