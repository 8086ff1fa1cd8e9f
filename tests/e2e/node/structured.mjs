// Structured output through the official openai client and its zod helper, on the tiny synthetic model (random
// weights: a valid answer is the grammar's doing): chat.completions.parse with zodResponseFormat returns a parsed
// object that zod accepts, on every seed; a json_schema response_format validates with ajv; the stream helper's
// final text equals the whole answer for the same seed.
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { client, main, modelName } from './common.mjs';

const Person = z.object({
  name: z.string().max(12),
  age: z.number().int().min(0).max(120),
  role: z.enum(['admin', 'user', 'guest']),
  tags: z.array(z.string().max(8)).max(3),
});

const messages = [{ role: 'user', content: 'Describe a person.' }];

main(async () => {
  for (let seed = 0; seed < 4; seed++) {
    const completion = await client.chat.completions.parse({
      model: modelName,
      messages,
      seed,
      max_tokens: 200,
      response_format: zodResponseFormat(Person, 'person'),
    });
    const message = completion.choices[0].message;
    assert.equal(completion.choices[0].finish_reason, 'stop');
    assert.ok(message.parsed, `seed ${seed}: nothing parsed from ${message.content}`);
    Person.parse(message.parsed);  // throws if the object breaks the schema
  }

  const schema = {
    type: 'object',
    properties: { id: { type: 'string', pattern: '^[a-z]{2}-[0-9]{3}$' }, ok: { type: 'boolean' } },
    required: ['id', 'ok'],
    additionalProperties: false,
  };
  const validate = new Ajv().compile(schema);
  const body = {
    model: modelName,
    messages,
    seed: 9,
    max_tokens: 100,
    response_format: { type: 'json_schema', json_schema: { name: 'record', schema, strict: true } },
  };
  const whole = await client.chat.completions.create(body);
  const document = JSON.parse(whole.choices[0].message.content);
  assert.ok(validate(document), JSON.stringify(validate.errors));

  const stream = client.chat.completions.stream(body);
  const streamed = await stream.finalChatCompletion();
  assert.equal(streamed.choices[0].message.content, whole.choices[0].message.content);
});
