// Fields tern does not support reach the official client as a BadRequestError (HTTP 400) whose message and `param`
// name the field, as OpenAI answers them; so does an image part of a chat message (these models take text only).
// The fields tern accepts and ignores (`user`, `metadata`, ...) do not fail a request.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { client, main, modelName } from './common.mjs';

const kMessages = [{ role: 'user', content: 'Once upon a time' }];

async function expectBadRequest(promise, param, label) {
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof OpenAI.BadRequestError, `${label}: ${error}`);
    assert.equal(error.status, 400, label);
    assert.equal(error.param, param, label);
    assert.ok(error.message.includes(param), `${label}: the message names '${param}': ${error.message}`);
    return true;
  });
}

main(async () => {
  // `prediction` is OpenAI's predicted outputs; `not_a_field` is a typo's stand-in.
  await expectBadRequest(client.chat.completions.create({ model: modelName, messages: kMessages, max_tokens: 4,
                                                          prediction: { type: 'content', content: 'x' } }),
                         'prediction', 'chat with prediction');
  await expectBadRequest(client.completions.create({ model: modelName, prompt: 'Once', max_tokens: 4,
                                                     not_a_field: true }),
                         'not_a_field', 'completions with an unknown field');
  // OpenAI's deprecated function calling (`tools` replaced it, and tern takes those).
  await expectBadRequest(client.chat.completions.create({
    model: modelName, max_tokens: 4,
    functions: [{ name: 'f', parameters: { type: 'object', properties: {} } }],
    messages: kMessages }), 'functions', 'chat with functions');
  const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
  await expectBadRequest(client.chat.completions.create({
    model: modelName, max_tokens: 4,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] }] }),
  'messages[0].content', 'chat with an image part');

  const ignored = { user: 'user-1', metadata: { purpose: 'test' }, store: false, service_tier: 'auto' };
  const chat = await client.chat.completions.create({ model: modelName, messages: kMessages, max_tokens: 4,
                                                      ...ignored });
  assert.equal(chat.usage.completion_tokens > 0, true);
  const completion = await client.completions.create({ model: modelName, prompt: 'Once', max_tokens: 4, user: 'u' });
  assert.equal(completion.usage.completion_tokens > 0, true);
});
