// The pure parts, no service: ids beyond 2^53 survive parsing, and error bodies map to the library's classes.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AuthError,
  HippocampusError,
  InvalidInput,
  LLMError,
  NotFound,
  SchemaMismatchError,
  ServiceUnavailable,
  fromWire,
  parseJson,
  quoteUnsafeIntegers,
} from "../dist/src/index.js";
import { errorOf } from "../dist/src/errors.js";

test("integers beyond 2^53 come back exact, as strings; everything else as JSON.parse reads it", () => {
  const text =
    '{"id": 4611686018427387905, "ids": [1, 9007199254740993, -9007199254740993], "score": 1.2088184285163879,' +
    ' "big_float": 12345678901234567.0, "e": 1e300, "text": "id 4611686018427387905 \\" 9007199254740993", "n": 9007199254740991}';
  const parsed = parseJson(text);
  assert.equal(parsed.id, "4611686018427387905");
  assert.deepEqual(parsed.ids, [1, "9007199254740993", "-9007199254740993"]);
  assert.equal(parsed.score, 1.2088184285163879);
  assert.equal(parsed.big_float, 12345678901234567.0);
  assert.equal(parsed.e, 1e300);
  assert.equal(parsed.text, 'id 4611686018427387905 " 9007199254740993'); // inside a string nothing changes
  assert.equal(parsed.n, 9007199254740991); // the largest safe integer stays a number
  const plain = '{"a": [1, 2.5, "x"], "b": {"c": null}}';
  assert.equal(quoteUnsafeIntegers(plain), plain);
});

test("an error body names the class; an unknown type falls back by status, then to the base class", () => {
  const cases = [
    ["NotFound", 404, NotFound],
    ["InvalidInput", 413, InvalidInput], // the guard's body cap: the type decides, not the status
    ["AuthError", 429, AuthError],
    ["SchemaMismatchError", 503, SchemaMismatchError],
    ["LLMError", 502, LLMError],
    ["SomethingNew", 503, ServiceUnavailable], // by status: the first class of 503, as errors.from_wire in Python
    ["Forbidden", 403, HippocampusError],
    ["MethodNotAllowed", 405, HippocampusError],
  ];
  for (const [type, status, cls] of cases) {
    const error = fromWire(type, "why", status);
    assert.equal(error.constructor, cls, type);
    assert.equal(error.type, type);
    assert.equal(error.status, status);
    assert.equal(error.message, "why");
  }
  const proxy = errorOf(502, "<html>Bad gateway</html>");
  assert.equal(proxy.constructor, LLMError); // 502 without a body of ours: by status
  assert.equal(proxy.message, "HTTP 502: <html>Bad gateway</html>");
  assert.equal(errorOf(404, '{"error": {"type": "NotFound", "message": "memory 5 not found for this user"}}').message,
    "memory 5 not found for this user");
});
