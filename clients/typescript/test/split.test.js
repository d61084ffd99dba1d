// addMany's split, no service: a batch over MAX_ADD_MANY goes as several requests of at most MAX_ADD_MANY items,
// in order, each with the caller's options, and the ids come back concatenated in input order (as the Python
// Client's _parts). The fetch seam (ClientOptions.fetch) records each request and answers as the service does:
// InvalidInput 422 above the cap, else one id per item. That the constant is the service's own
// (contract/wire.MAX_ADD_MANY) is checked by tests/clients/test_typescript_client.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, InvalidInput, MAX_ADD_MANY } from "../dist/src/index.js";

function recording(refuse = () => false) {
  const sent = [];
  const fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    sent.push({ url, method: init.method, body });
    const reply = (status, value) => new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });
    if (body.items.length > MAX_ADD_MANY || refuse(body)) {
      return reply(422, { error: { type: "InvalidInput", message: `a batch may hold at most ${MAX_ADD_MANY} items` } });
    }
    return reply(200, { ids: body.items.map((item) => item.n) });
  };
  return { sent, client: new Client("http://127.0.0.1:1", { api_key: "k", fetch }) };
}

const items = (count) => Array.from({ length: count }, (_, n) => ({ user_id: "u", text: `note ${n}`, n }));

test("a batch over MAX_ADD_MANY goes as several requests, the ids in input order", async () => {
  assert.equal(MAX_ADD_MANY, 1000);
  const { sent, client } = recording();
  const batch = items(2 * MAX_ADD_MANY + 500);
  const ids = await client.addMany(batch, { batch_size: 64 });
  assert.deepEqual(sent.map((s) => s.body.items.length), [MAX_ADD_MANY, MAX_ADD_MANY, 500]);
  assert.deepEqual(ids, batch.map((item) => item.n));
  for (const s of sent) {
    assert.equal(s.url, "http://127.0.0.1:1/v1/memories/batch");
    assert.equal(s.method, "POST");
    assert.equal(s.body.batch_size, 64);
  }
  assert.deepEqual(sent.flatMap((s) => s.body.items), batch);
});

test("at the cap one request; an empty batch one request (the service answers it)", async () => {
  const full = recording();
  assert.equal((await full.client.addMany(items(MAX_ADD_MANY))).length, MAX_ADD_MANY);
  assert.deepEqual(full.sent.map((s) => s.body.items.length), [MAX_ADD_MANY]);
  const empty = recording();
  assert.deepEqual(await empty.client.addMany([]), []);
  assert.deepEqual(empty.sent.map((s) => s.body.items.length), [0]);
});

test("a part the service refuses raises InvalidInput; the parts before it were sent, none after", async () => {
  const { sent, client } = recording((body) => body.items.some((item) => item.n === MAX_ADD_MANY + 7));
  await assert.rejects(client.addMany(items(3 * MAX_ADD_MANY)), InvalidInput);
  assert.deepEqual(sent.map((s) => s.body.items[0].n), [0, MAX_ADD_MANY]);
  await assert.rejects(client.addMany("not a list"), InvalidInput);
});
