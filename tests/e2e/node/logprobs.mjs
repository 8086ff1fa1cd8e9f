// Logprobs are consistent: every logprob <= 0, top_logprobs sorted and summing to at most 1 in probability, the
// greedy token is the top-1, streamed and whole responses agree, and (with TERN_REFERENCE_JSON, stories260K's
// float64 reference) the values match log-softmax of the reference logits.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { baseURL, client, collect, completionLogprobs, main, modelName } from './common.mjs';

const kTop = 5;
const kMaxTokens = 16;
const kTolerance = 2e-3;  // f32 engine against the float64 reference

function checkItems(items, { sorted }) {
  assert.ok(items.length > 0);
  for (const [position, item] of items.entries()) {
    const where = `token ${position} '${item.token}'`;
    assert.ok(item.logprob <= 0, `${where}: logprob ${item.logprob} <= 0`);
    assert.ok(item.top_logprobs.length >= 1 && item.top_logprobs.length <= kTop, where);
    const values = item.top_logprobs.map((top) => top.logprob);
    if (sorted) {
      assert.equal(item.top_logprobs.length, kTop, where);
      for (let idx = 1; idx < values.length; ++idx) assert.ok(values[idx - 1] >= values[idx], `${where}: sorted`);
    }
    assert.ok(values.every((value) => value <= 0), where);
    assert.ok(values.reduce((sum, value) => sum + Math.exp(value), 0) <= 1 + 1e-4, `${where}: probabilities <= 1`);
    // Greedy: the chosen token is the most likely one. The engine computes the chosen token's logprob and the top
    // list in two ways, which may differ in the last bit of a float.
    const close = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));
    assert.ok(close(item.logprob, Math.max(...values)), `${where}: ${item.logprob} is the top logprob ${values}`);
    assert.ok(item.top_logprobs.some((top) => top.token === item.token && close(top.logprob, item.logprob)), where);
    // A piece that is part of a character shows as U+FFFD; its bytes are the real ones.
    if (item.bytes && !item.token.includes('\uFFFD')) {
      assert.deepEqual(item.bytes, [...Buffer.from(item.token, 'utf8')], `${where}: bytes`);
    }
  }
}

// A token's piece as logprobs show it: detokenized after BOS, which keeps the piece's leading space.
async function tokenText(id, bos) {
  const response = await fetch(`${baseURL}/detokenize`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ tokens: [bos, id] }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).prompt;
}

// Differences of log-probabilities are differences of logits; the first step's values are log-softmax of the full
// reference logits.
async function checkAgainstReference(reference, bos, items) {
  const logits = reference.last_prompt_logits;
  const peak = Math.max(...logits);
  const logSumExp = peak + Math.log(logits.reduce((sum, logit) => sum + Math.exp(logit - peak), 0));
  assert.ok(items.length <= reference.steps.length);
  for (const [position, item] of items.entries()) {
    const step = reference.steps[position];
    assert.equal(item.token, await tokenText(step.token, bos), `step ${position}: the reference's greedy token`);
    for (const [rank, [id, logit]] of step.top5.entries()) {
      const top = item.top_logprobs[rank];
      assert.equal(top.token, await tokenText(id, bos), `step ${position} rank ${rank}`);
      const expected = logit - step.top5[0][1];
      assert.ok(Math.abs(top.logprob - item.top_logprobs[0].logprob - expected) < kTolerance,
        `step ${position} rank ${rank}: logprob gap ${top.logprob - item.top_logprobs[0].logprob} vs ${expected}`);
      if (position === 0) {
        assert.ok(Math.abs(top.logprob - (logit - logSumExp)) < kTolerance,
          `first step rank ${rank}: ${top.logprob} vs log-softmax ${logit - logSumExp}`);
      }
    }
  }
}

// `spells`: the tokens are whole characters, so they spell the reply.
async function checkChat(prompt, spells) {
  const request = { model: modelName, messages: [{ role: 'user', content: prompt }], max_tokens: kMaxTokens,
                    temperature: 0, logprobs: true, top_logprobs: kTop };
  const whole = await client.chat.completions.create(request);
  const items = whole.choices[0].logprobs.content;
  assert.equal(items.length, whole.usage.completion_tokens, 'one logprob per generated token');
  checkItems(items, { sorted: true });
  if (spells) assert.equal(items.map((item) => item.token).join(''), whole.choices[0].message.content);

  const streamed = await collect(await client.chat.completions.create({ ...request, stream: true }), { chat: true });
  assert.deepEqual(streamed.choices[0].logprobs, items, 'streamed logprobs equal the whole response\'s');
  assert.equal(streamed.choices[0].text, whole.choices[0].message.content);

  const without = await client.chat.completions.create({ ...request, logprobs: false, top_logprobs: undefined });
  assert.equal(without.choices[0].logprobs, null);
}

async function checkCompletions(prompt, reference) {
  const request = { model: modelName, prompt, max_tokens: kMaxTokens, temperature: 0, logprobs: kTop };
  const whole = await client.completions.create(request);
  const choice = whole.choices[0];
  const logprobs = choice.logprobs;
  assert.equal(logprobs.tokens.length, whole.usage.completion_tokens);
  assert.equal(logprobs.token_logprobs.length, logprobs.tokens.length);
  // Completions' top_logprobs are objects keyed by text: pieces that decode alike collapse, and JavaScript orders
  // integer-like keys first, so order is checked on chat's lists only.
  checkItems(completionLogprobs(logprobs), { sorted: false });
  if (reference) {
    assert.equal(logprobs.tokens.join(''), choice.text, 'the tokens spell the text');
    // text_offset: where each token's text starts in the choice's text (ASCII here, so bytes and characters agree).
    let offset = 0;
    for (const [idx, token] of logprobs.tokens.entries()) {
      assert.equal(logprobs.text_offset[idx], offset);
      offset += token.length;
    }
    await checkAgainstReference(reference, reference.prompt_tokens[0], completionLogprobs(logprobs).map((item) => ({
      ...item, top_logprobs: [...item.top_logprobs].sort((a, b) => b.logprob - a.logprob),
    })));
  }

  const streamed = await collect(await client.completions.create({ ...request, stream: true }), { chat: false });
  assert.deepEqual(streamed.choices[0].logprobs, completionLogprobs(logprobs));
}

main(async () => {
  const referencePath = process.env.TERN_REFERENCE_JSON;
  const references = referencePath ? JSON.parse(readFileSync(referencePath, 'utf8')).prompts : [];
  const prompts = references.length > 0 ? references.map((reference) => reference.text) : ['Hello world', 'A b c'];
  for (const [idx, prompt] of prompts.entries()) {
    await checkCompletions(prompt, references[idx]);
    await checkChat(prompt, references.length > 0);
  }
});
