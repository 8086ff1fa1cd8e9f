// Tool calling through the official openai client, on the tiny synthetic model with the Qwen 2.5 chat template:
// forced calls (tool_choice "required" or a named function) whose arguments ajv validates against the function's
// JSON Schema, the SDK's stream helper assembling the same calls as the whole answer, and the client's own message
// objects (an assistant message with tool_calls, tool results) sent back as the next turn's history.
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { client, main, modelName } from './common.mjs';

const kTools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a place',
      parameters: {
        type: 'object',
        properties: {
          location: { type: 'string', maxLength: 20 },
          unit: { enum: ['celsius', 'fahrenheit'] },
          days: { type: 'integer', minimum: 1, maximum: 14 },
        },
        required: ['location', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: {
        type: 'object',
        properties: { zone: { type: 'string', pattern: '^[A-Z]{3}$' } },
        required: ['zone'],
        additionalProperties: false,
      },
    },
  },
];
const kMessages = [{ role: 'user', content: 'What is the weather in Oslo, and the time there?' }];

const ajv = new Ajv({ strict: false });
const kValidators = Object.fromEntries(kTools.map((tool) => [tool.function.name, ajv.compile(tool.function.parameters)]));

function checkCalls(message, label) {
  assert.ok(Array.isArray(message.tool_calls) && message.tool_calls.length > 0, `${label}: ${JSON.stringify(message)}`);
  for (const call of message.tool_calls) {
    assert.equal(call.type, 'function', label);
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/, label);
    const validate = kValidators[call.function.name];
    assert.ok(validate, `${label}: an unknown function ${call.function.name}`);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validate(args), `${label}: ${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
}

function callsOf(message) {
  return message.tool_calls.map((call) => ({ name: call.function.name, arguments: call.function.arguments }));
}

main(async () => {
  const request = { model: modelName, messages: kMessages, tools: kTools, max_tokens: 400, temperature: 1 };
  for (const seed of [0, 1, 2, 3]) {
    const whole = await client.chat.completions.create({ ...request, tool_choice: 'required', seed });
    const choice = whole.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(whole));
    assert.equal(choice.message.content, null);
    checkCalls(choice.message, `required, seed ${seed}`);

    // The SDK's stream helper puts the deltas back together: the same calls as the whole answer.
    const stream = client.chat.completions.stream({ ...request, tool_choice: 'required', seed });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(callsOf(final.choices[0].message), callsOf(choice.message), `stream, seed ${seed}`);

    const named = await client.chat.completions.create({
      ...request, seed, tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    checkCalls(named.choices[0].message, `named, seed ${seed}`);
    assert.deepEqual(named.choices[0].message.tool_calls.map((call) => call.function.name), ['get_time']);

    // The next turn: the client's assistant message as it came, and one result per call.
    const results = choice.message.tool_calls.map((call) => ({
      role: 'tool', tool_call_id: call.id, content: JSON.stringify({ ok: true, name: call.function.name }),
    }));
    const next = await client.chat.completions.create({
      ...request, seed, max_tokens: 8, messages: [...kMessages, choice.message, ...results],
    });
    assert.ok(next.usage.prompt_tokens > whole.usage.prompt_tokens, 'the calls and results reach the prompt');
  }

  const badTools = [{ type: 'function', function: { name: 'f', parameters: { type: 'array' } } }];
  await assert.rejects(client.chat.completions.create({ ...request, tools: badTools }), (error) => {
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.param, 'tools[0].function.parameters');
    return true;
  });
});
