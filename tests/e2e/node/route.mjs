// The official openai client through `tern route` (TERN_BASE_URL) in front of a `tern serve` replica
// (TERN_DIRECT_URL): completions and chat, whole and streamed, answer as the replica answers directly; an unknown
// model is the client's NotFoundError; a wrong key its AuthenticationError.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, collect, main, modelName } from './common.mjs';

const direct = new OpenAI({ baseURL: `${process.env.TERN_DIRECT_URL}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const routed = new OpenAI({ baseURL: client.baseURL, apiKey: process.env.TERN_ROUTE_KEY, maxRetries: 0 });

async function scenario() {
  const completion = { model: modelName, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 };
  const wanted = await direct.completions.create(completion);
  const whole = await routed.completions.create(completion);
  assert.equal(whole.choices[0].text, wanted.choices[0].text);
  const streamed = await collect(await routed.completions.create({ ...completion, stream: true }), { chat: false });
  assert.equal(streamed.choices[0].text, wanted.choices[0].text);
  assert.equal(streamed.usage, null, 'no usage chunk unless the client asks for one');

  const chat = { model: modelName, messages: [{ role: 'user', content: 'Tell a story.' }], max_tokens: 12,
                 temperature: 0 };
  const wantedChat = await direct.chat.completions.create(chat);
  const wholeChat = await routed.chat.completions.create(chat);
  assert.equal(wholeChat.choices[0].message.content, wantedChat.choices[0].message.content);
  const streamedChat = await collect(await routed.chat.completions.create({ ...chat, stream: true,
                                                                            stream_options: { include_usage: true } }),
                                     { chat: true });
  assert.equal(streamedChat.choices[0].text, wantedChat.choices[0].message.content);
  assert.equal(streamedChat.usage.completion_tokens, wantedChat.usage.completion_tokens);

  const models = await routed.models.list();
  assert.deepEqual(models.data.map((model) => model.id), [modelName]);
  await assert.rejects(routed.completions.create({ ...completion, model: 'no-such-model' }), OpenAI.NotFoundError);
  const stranger = new OpenAI({ baseURL: client.baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(stranger.completions.create(completion), OpenAI.AuthenticationError);
}

main(scenario);
