// Stop strings cut the output exactly: the text equals the unstopped greedy text up to the first occurrence of any
// stop string (the stop string itself excluded), with finish_reason "stop"; whole and streamed, completions and chat.
import assert from 'node:assert/strict';
import { client, collect, main, modelName } from './common.mjs';

const kMaxTokens = 48;
const kPrompt = 'Once upon a time';

// Stop strings taken from the unstopped text: short and long ones, ones that span token boundaries, a list whose
// later entry occurs first, and one that never occurs. Only plain ASCII stretches are used, so that JavaScript's
// UTF-16 indexes and the server's bytes agree.
function stopCases(text) {
  const plain = (from, length) => /^[A-Za-z ,.!?']+$/.test(text.slice(from, from + length));
  const pick = (from, length) => {
    for (let start = from; start + length <= text.length; ++start) {
      if (plain(start, length)) return text.slice(start, start + length);
    }
    return null;
  };
  const cases = [];
  for (const [from, length] of [[1, 1], [4, 3], [Math.floor(text.length / 2), 7], [Math.floor(text.length / 3), 2]]) {
    const stop = pick(from, length);
    if (stop) cases.push([stop]);
  }
  const late = pick(Math.floor((2 * text.length) / 3), 4);
  const early = pick(3, 5);
  if (late && early) cases.push([late, early]);
  cases.push(['this string never appears \u{1F600}']);
  assert.ok(cases.length >= 4, `enough plain stretches in '${text}'`);
  return cases;
}

function expectedCut(text, stops) {
  const found = stops.map((stop) => text.indexOf(stop)).filter((at) => at >= 0);
  return found.length === 0 ? null : text.slice(0, Math.min(...found));
}

async function checkEndpoint(chat) {
  const base = chat
    ? { model: modelName, messages: [{ role: 'user', content: kPrompt }], max_tokens: kMaxTokens, temperature: 0 }
    : { model: modelName, prompt: kPrompt, max_tokens: kMaxTokens, temperature: 0 };
  const create = (request) => (chat ? client.chat.completions.create(request) : client.completions.create(request));
  const textOf = (response) => (chat ? response.choices[0].message.content : response.choices[0].text);

  // ignore_eos (a vLLM extension) keeps the unstopped run at full length, so every stop string has text to cut.
  const unstopped = await create({ ...base, ignore_eos: true });
  const full = textOf(unstopped);
  assert.equal(unstopped.choices[0].finish_reason, 'length');
  for (const stops of stopCases(full)) {
    const cut = expectedCut(full, stops);
    const request = { ...base, ignore_eos: true, stop: stops.length === 1 ? stops[0] : stops };
    const whole = await create(request);
    const label = `${chat ? 'chat' : 'completions'} stop ${JSON.stringify(stops)} on ${JSON.stringify(full)}`;
    assert.equal(textOf(whole), cut ?? full, label);
    assert.equal(whole.choices[0].finish_reason, cut === null ? 'length' : 'stop', label);
    if (cut !== null) assert.ok(whole.usage.completion_tokens < kMaxTokens, `${label}: generation ended early`);

    const streamed = await collect(await create({ ...request, stream: true }), { chat });
    assert.equal(streamed.choices[0].text, cut ?? full, `streamed ${label}`);
    assert.equal(streamed.choices[0].finish_reason, cut === null ? 'length' : 'stop', `streamed ${label}`);
  }
}

main(async () => {
  await checkEndpoint(false);
  await checkEndpoint(true);
});
