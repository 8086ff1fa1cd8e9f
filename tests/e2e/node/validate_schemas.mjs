// Validates documents against their JSON Schemas with ajv (draft 2020-12, formats from ajv-formats): a validator
// that shares no code with tern's grammar compiler, for engine_structured_property_test. Reads a JSON Lines file,
// one {"id", "schema", "output"} a line, where output is the generated text; every output must parse as JSON and
// validate. Prints each rejection (id, text, ajv's errors) and a summary line; exits 1 when any was rejected.
//   node validate_schemas.mjs outputs.jsonl
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// strict off: the schemas are generated to test tern, and use keyword mixes (type lists, enums beside types) that
// ajv's strict mode merely warns about.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const compiled = new Map();  // schema text -> validate function: several outputs share a schema
function validatorFor(schema) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) compiled.set(key, ajv.compile(schema));
  return compiled.get(key);
}

function check(line) {
  const { id, schema, output } = JSON.parse(line);
  let document;
  try {
    document = JSON.parse(output);
  } catch (error) {
    return `${id}: not JSON (${error.message}): ${JSON.stringify(output)}`;
  }
  let validate;
  try {
    validate = validatorFor(schema);
  } catch (error) {
    return `${id}: ajv cannot compile the schema (${error.message}): ${JSON.stringify(schema)}`;
  }
  if (validate(document)) return null;
  return `${id}: rejected: ${JSON.stringify(output)}\n  schema: ${JSON.stringify(schema)}\n  errors: ` +
    JSON.stringify(validate.errors);
}

const path = process.argv[2];
if (!path) {
  console.error('usage: node validate_schemas.mjs outputs.jsonl');
  process.exit(2);
}
const lines = readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 0);
const rejections = lines.map(check).filter((message) => message !== null);
for (const message of rejections) console.log(message);
console.log(`ajv: ${lines.length} documents, ${compiled.size} schemas, ${rejections.length} rejected`);
process.exit(rejections.length === 0 ? 0 : 1);
