// The client's `logit_bias` (OpenAI's object form, token id -> bias) changes the greedy output: -100 on the greedy
// first token makes another token come first, +100 on one token makes it every token. Token ids come from
// `tern generate`'s greedy run, which the server's temperature-0 run matches (greedy.mjs checks that).
import assert from 'node:assert/strict';
import { client, main, modelName, ternGenerate } from './common.mjs';

const kPrompt = 'Once upon a time';
const kMaxTokens = 8;

async function pieces(logitBias) {
  const response = await client.completions.create({
    model: modelName, prompt: kPrompt, max_tokens: kMaxTokens, temperature: 0, logprobs: 0,
    ...(logitBias ? { logit_bias: logitBias } : {}),
  });
  return { text: response.choices[0].text, tokens: response.choices[0].logprobs.tokens };
}

main(async () => {
  const greedy = ternGenerate(kPrompt, kMaxTokens);
  assert.ok(greedy.tokens.length >= 4, `greedy run too short: ${JSON.stringify(greedy)}`);
  const plain = await pieces(null);
  assert.equal(plain.text, greedy.text, 'the unbiased run is the greedy one');

  const banned = await pieces({ [String(greedy.tokens[0])]: -100 });
  assert.notEqual(banned.tokens[0], plain.tokens[0], 'the banned greedy token does not come first');
  assert.notEqual(banned.text, plain.text);

  const forced = await pieces({ [String(greedy.tokens[3])]: 100 });
  assert.equal(forced.tokens.length, kMaxTokens);
  for (const token of forced.tokens) assert.equal(token, plain.tokens[3], 'the +100 token every time');
});
