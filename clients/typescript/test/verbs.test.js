// Every verb of the client against a real `hippocampus serve` (offline embedder and rules model), with the
// operator key; each test writes under user ids of its own.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { InvalidInput, NotFound } from "../dist/src/index.js";
import { OPERATOR, SERVICE_URL, freshUser, operator } from "./support.js";

const memory = operator();
const texts = (records) => records.map((r) => r.text);

test("add, get, page, getAll and iterAll: what was added comes back, oldest first", async () => {
  const user = freshUser("add");
  const first = await memory.add("I moved to Berlin in May", user, { ts: new Date("2025-05-02T10:00:00Z"), chat_id: "c1" });
  assert.equal(first.stored, true);
  assert.equal(first.ids.length, 1);
  const second = await memory.add([{ role: "user", content: "My sister lives in Lisbon" }], user, { ts: 1_700_000_000 });
  const got = await memory.get(first.ids[0], user);
  assert.equal(got.text, "I moved to Berlin in May");
  assert.equal(got.chat_id, "c1");
  assert.equal(got.ts, Date.parse("2025-05-02T10:00:00Z") / 1000); // a Date goes as epoch seconds
  assert.equal((await memory.get(String(first.ids[0]), user)).id, first.ids[0]); // an id as digits works the same
  const page = await memory.page(user, { limit: 1 });
  assert.equal(page.total, 2);
  assert.deepEqual(texts(page.items), ["My sister lives in Lisbon"]); // 1_700_000_000 is 2023: the older event
  assert.equal(page.next_offset, 1);
  assert.deepEqual(texts(await memory.getAll(user)), ["My sister lives in Lisbon", "I moved to Berlin in May"]);
  const seen = [];
  for await (const record of memory.iterAll(user)) seen.push(record.id);
  assert.deepEqual(seen, [second.ids[0], first.ids[0]]);
});

test("addMany stores every item and answers the ids in input order", async () => {
  const user = freshUser("many");
  const items = ["one apple", "two pears", "three plums"].map((text) => ({ text, user_id: user }));
  const ids = await memory.addMany(items, { batch_size: 2 });
  assert.equal(ids.length, 3);
  assert.deepEqual(await Promise.all(ids.map(async (id) => (await memory.get(id, user)).text)), ["one apple", "two pears", "three plums"]);
});

test("search recalls by meaning; options (filters, limit) reach the service, page's filters as JSON text", async () => {
  const user = freshUser("search");
  await memory.addMany([
    { text: "I moved to Berlin in May", user_id: user, chat_id: "home" },
    { text: "My favourite food is ramen", user_id: user, chat_id: "food" },
    { text: "I ride my bike to work in Berlin", user_id: user, chat_id: "work" },
  ]);
  const all = await memory.search("my favourite food", user, { limit: 5 });
  assert.equal(all.episodic[0].memory.text, "My favourite food is ramen");
  assert.ok(all.episodic[0].score > 0);
  const one = await memory.search("Berlin", user, { limit: 1 });
  assert.equal(one.episodic.length, 1);
  const work = await memory.search("Berlin", user, { filters: { chat_id: "work" } });
  assert.deepEqual(work.episodic.map((h) => h.memory.text), ["I ride my bike to work in Berlin"]);
  const paged = await memory.page(user, { filters: { chat_id: { in: ["food", "work"] } } }); // an object goes as JSON text
  assert.deepEqual(texts(paged.items).sort(), ["I ride my bike to work in Berlin", "My favourite food is ramen"]);
});

test("update, history and undo: the id stays, history lists both texts, undo puts the old one back", async () => {
  const user = freshUser("update");
  const [id] = (await memory.add("I work at Acme", user)).ids;
  const updated = await memory.update(id, "I work at Globex", user, { metadata: { source: "hr" } });
  assert.equal(updated.id, id);
  assert.equal(updated.text, "I work at Globex");
  assert.equal(updated.metadata.source, "hr");
  const events = await memory.history(id, user);
  assert.deepEqual(events.map((e) => e.action), ["created", "updated"]);
  assert.equal(events[1].old_text, "I work at Acme");
  const undone = await memory.undo(events[1].event_id, user);
  assert.equal(undone.action, "updated");
  assert.equal((await memory.get(id, user)).text, "I work at Acme");
});

test("delete removes one memory (its history stays); reset erases the user", async () => {
  const user = freshUser("delete");
  const ids = await memory.addMany([{ text: "a red door", user_id: user }, { text: "a blue gate", user_id: user }]);
  assert.equal(await memory.delete(ids[0], user), undefined);
  await assert.rejects(memory.get(ids[0], user), NotFound);
  assert.equal((await memory.history(ids[0], user)).at(-1).action, "deleted");
  assert.equal(await memory.reset(user), 1);
  assert.equal((await memory.page(user)).total, 0);
});

test("updateMany and deleteMany answer a result per item", async () => {
  const user = freshUser("batch");
  const ids = await memory.addMany(["x one", "x two", "x three"].map((text) => ({ text, user_id: user })));
  const updated = await memory.updateMany([{ memory_id: ids[0], text: "x ONE" }, { memory_id: ids[1], text: "x TWO" }], user);
  assert.deepEqual(updated.results.map((r) => r.status), ["ok", "ok"]);
  assert.equal((await memory.get(ids[1], user)).text, "x TWO");
  const gone = await memory.deleteMany(`${ids[0]}, ${ids[2]}`, user); // a string of ids, as the Python Client takes
  assert.deepEqual([...gone.deleted].sort(), [ids[0], ids[2]].sort());
  assert.deepEqual(texts(await memory.getAll(user)), ["x TWO"]);
  const missing = await memory.deleteMany([ids[0]], user);
  assert.deepEqual(missing.not_found, [ids[0]]);
});

test("markUsed and observe: a used memory counts a hit; observe keeps what the user asked to remember", async () => {
  const user = freshUser("observe");
  const [id] = (await memory.add("I moved to Berlin in May", user)).ids;
  // an id as its digits, as an id beyond 2^53 comes back: the service reads it as the integer
  const [marked] = await memory.markUsed(String(id), user, { context: "the answer named Berlin" });
  assert.equal(marked.id, id);
  assert.equal(marked.hit_count, 1);
  const hits = (await memory.search("Berlin", user)).episodic;
  const observed = await memory.observe(
    [
      { role: "user", content: "Please remember that my dog is called Rex" },
      { role: "assistant", content: "Noted!" },
    ],
    user,
    { shown: hits, chat_id: "c7" },
  );
  assert.equal(observed.added.length, 1);
  const kept = await memory.get(observed.added[0], user);
  assert.match(kept.text, /Rex/);
  assert.equal(kept.chat_id, "c7");
});

test("observe's forget request, then restore brings the memory back", async () => {
  const user = freshUser("restore");
  const [id] = (await memory.add("I moved to Berlin in May", user)).ids;
  const forgot = await memory.observe(
    [
      { role: "user", content: "Please forget that I moved to Berlin" },
      { role: "assistant", content: "Done." },
    ],
    user,
    { shown: [id] },
  );
  assert.deepEqual(forgot.deleted, [id]);
  await assert.rejects(memory.get(id, user), NotFound);
  const back = await memory.restore(id, user);
  assert.equal(back.text, "I moved to Berlin in May");
  await assert.rejects(memory.restore(id, user), InvalidInput); // restored already
});

test("consolidate, decay, curate, stats, context, buildGraph and graph", async () => {
  const user = freshUser("life");
  const [id] = (await memory.add("I like green tea in the morning", user, { infer: true })).ids;
  await memory.add("I moved to Berlin in May", user);
  const consolidated = await memory.consolidate({ user_id: user });
  assert.equal(consolidated.examined, 2);
  assert.equal(consolidated.errors, 0);
  const decayed = await memory.decay({ user_id: user });
  assert.ok(decayed.examined >= 2);
  const curated = await memory.curate(id, user, { category: "core", importance: 0.9 });
  assert.equal(curated.metadata.life.category, "core");
  const stats = await memory.stats({ user_id: user });
  assert.equal(stats.total, stats.episodic + stats.semantic + stats.procedural);
  assert.ok(stats.total >= 2);
  const block = await memory.context(user, { query: "tea", max_items: 5 });
  assert.match(block, /green tea/);
  const built = await memory.buildGraph({ user_id: user });
  assert.equal(built.users, 1);
  assert.ok(built.memories_read >= 2);
  const graph = await memory.graph(user, { limit: 50 });
  assert.ok(graph.entities.some((e) => e.name === "Berlin"));
});

test("exportMd and importMd, exportJsonl and importJsonl: text round trips", async () => {
  const user = freshUser("export");
  await memory.addMany([{ text: "I moved to Berlin in May", user_id: user }, { text: "I play the cello", user_id: user }]);
  const md = await memory.exportMd(user, { now: new Date() });
  assert.match(md, /I play the cello/);
  const again = await memory.importMd(user, md);
  assert.equal(again.created.length, 0); // the same file again changes nothing
  const jsonl = await memory.exportJsonl(user);
  assert.equal(jsonl.count, 2);
  const copy = freshUser("copy");
  const restored = await memory.importJsonl(copy, jsonl.text);
  assert.equal(restored.created.length, 2);
  assert.deepEqual(texts(await memory.getAll(copy)).sort(), ["I moved to Berlin in May", "I play the cello"]);
});

test("healthy answers whether the service is up", async () => {
  assert.equal(await memory.healthy(), true);
});

test("the example of docs/typescript.md runs as written", async () => {
  const page = readFileSync(new URL("../../../docs/typescript.md", import.meta.url), "utf8");
  const example = page.match(/```ts\n(import \{ Client[\s\S]*?)```/)[1];
  const library = new URL("../dist/src/index.js", import.meta.url).href;
  const runnable = example
    .replace('from "hippocampus-client"', `from ${JSON.stringify(library)}`)
    .replace('"http://127.0.0.1:8765"', JSON.stringify(SERVICE_URL));
  const folder = mkdtempSync(join(tmpdir(), "hippocampus-doc-"));
  writeFileSync(join(folder, "example.mjs"), runnable);
  process.env.HIPPOCAMPUS_API_KEY = OPERATOR;
  await import(pathToFileURL(join(folder, "example.mjs")).href);
  assert.ok(texts(await memory.getAll("alice")).includes("I moved to Berlin in May"));
});
