// embeddings.create through the official client: it asks for base64 by default and decodes the float32 bytes itself,
// so those must equal the floats the server sends when asked for them; one vector per input, in order, unit length,
// the same for a text alone or in a batch, and different texts give different vectors.
import assert from 'node:assert/strict';
import { client, main, modelName } from './common.mjs';

const kTexts = ['Once upon a time', 'The little dog ran home.', 'Lily liked to play in the park with her friends.'];

function norm(vector) {
  return Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
}

main(async () => {
  const batch = await client.embeddings.create({ model: modelName, input: kTexts });
  assert.equal(batch.object, 'list');
  assert.equal(batch.data.length, kTexts.length);
  assert.ok(batch.usage.prompt_tokens >= kTexts.length, 'usage counts the input tokens');
  const dim = batch.data[0].embedding.length;
  assert.ok(dim > 0);
  batch.data.forEach((item, index) => {
    assert.equal(item.index, index);
    assert.equal(item.embedding.length, dim);
    assert.ok(Math.abs(norm(item.embedding) - 1) < 1e-4, `unit length, got ${norm(item.embedding)}`);
  });
  for (const [index, text] of kTexts.entries()) {
    const floats = await client.embeddings.create({ model: modelName, input: text, encoding_format: 'float' });
    assert.deepEqual(floats.data[0].embedding, batch.data[index].embedding, `'${text}' alone equals its batch row`);
  }
  const dot = batch.data[0].embedding.reduce((sum, value, idx) => sum + value * batch.data[1].embedding[idx], 0);
  assert.ok(dot < 0.9999, `different texts, different vectors (cosine ${dot})`);
});
