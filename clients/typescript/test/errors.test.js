// Keys, the 404 rule between tenants, and the error classes, against a real `hippocampus serve` with keys.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import {
  AuthError,
  Client,
  ConfigError,
  HippocampusError,
  InvalidInput,
  NotFound,
  ServiceUnavailable,
  StoreError,
} from "../dist/src/index.js";
import { KEY_A, KEY_B, OPERATOR, TENANT_A_USERS, TENANT_B_USERS, SERVICE_URL as URL, freshUser, operator } from "./support.js";

const [alice] = TENANT_A_USERS;
const [bob] = TENANT_B_USERS;

/** The error a promise rejects with (fails when it resolves). */
async function failure(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

test("no key and a wrong key are AuthError (a ConfigError, a HippocampusError), status 401", async () => {
  for (const client of [new Client(URL), new Client(URL, { api_key: "not-a-key-of-this-service-0123456789abcdef" })]) {
    const error = await failure(client.page("anyone"));
    assert.ok(error instanceof AuthError);
    assert.ok(error instanceof ConfigError && error instanceof HippocampusError && error instanceof Error);
    assert.equal(error.name, "AuthError");
    assert.equal(error.type, "AuthError");
    assert.equal(error.status, 401);
    assert.match(error.message, /API key/);
  }
  assert.equal(await new Client(URL).healthy(), true); // /healthz needs no key
});

test("a tenant key reads and writes its own users", async () => {
  const a = new Client(URL, { api_key: KEY_A });
  const [id] = (await a.add("alice keeps the spare key under the mat", alice)).ids;
  assert.equal((await a.get(id, alice)).text, "alice keeps the spare key under the mat");
  assert.ok((await a.stats()).total >= 1); // without user_id: the sum over the key's own users
});

test("tenant B cannot see or touch tenant A's memory: NotFound (404), worded as a missing memory", async () => {
  const a = new Client(URL, { api_key: KEY_A });
  const b = new Client(URL, { api_key: KEY_B });
  const [id] = (await a.add("alice's locker code is 4711", alice)).ids;
  for (const attempt of [
    () => b.get(id, alice), // A's user through B's key
    () => b.get(id, bob), // A's memory through B's own user
    () => b.history(id, alice),
    () => b.update(id, "stolen", alice),
    () => b.delete(id, alice),
    () => b.delete(id, bob),
    () => b.markUsed([id], bob),
    () => b.search("locker", alice),
  ]) {
    const error = await failure(attempt());
    assert.ok(error instanceof NotFound, `${attempt}: ${error}`);
    assert.equal(error.status, 404);
    assert.doesNotMatch(error.message, /tenant|key|forbidden/i);
  }
  assert.equal((await b.search("locker", bob)).episodic.length, 0);
  const still = await new Client(URL, { api_key: KEY_A }).get(id, alice);
  assert.equal(still.text, "alice's locker code is 4711");
  assert.equal((await operator().get(id, alice)).text, still.text); // the operator key sees every user
});

test("bad input is InvalidInput (422) from the service, and nothing is written", async () => {
  const memory = operator();
  const user = freshUser("bad");
  for (const attempt of [
    () => memory.add("", user),
    () => memory.add("hello", user, { metadata: { created_at: 5 } }), // a library-owned metadata key
    () => memory.add("hello", user, { no_such_argument: 1 }), // options pass through; the service refuses unknown ones
    () => memory.search("hello", user, { mode: "telepathy" }),
    () => memory.page(user, { limit: -1 }),
    () => memory.curate(1, user, {}),
  ]) {
    const error = await failure(attempt());
    assert.ok(error instanceof InvalidInput, `${attempt}: ${error}`);
    assert.equal(error.status, 422);
    assert.equal(error.type, "InvalidInput");
  }
  assert.equal((await memory.page(user)).total, 0);
});

test("a bad id is refused here, as the Python Client does, before any request", async () => {
  let requests = 0;
  const counting = new Client(URL, { api_key: OPERATOR, fetch: (...args) => ((requests += 1), fetch(...args)) });
  for (const id of ["abc", -1, 1.5, 2 ** 60, "9223372036854775808", "", null, { id: 1 }]) {
    const error = await failure(counting.get(id, "someone"));
    assert.ok(error instanceof InvalidInput, String(id));
    assert.equal(error.status, undefined);
  }
  await assert.rejects(counting.get(1, 42), InvalidInput); // a user id must be text
  assert.equal(requests, 0);
  await assert.rejects(counting.get("9223372036854775807", "someone"), NotFound); // the largest id is sent
  assert.equal(requests, 1);
});

test("an error type the client does not know is the base class, with the service's type and status", async () => {
  // the guard refuses a state-changing request from another site as 403 "Forbidden", no class of the library
  const crossSite = new Client(URL, {
    api_key: OPERATOR,
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, Origin: "http://elsewhere.example" } }),
  });
  const error = await failure(crossSite.add("hello", freshUser("origin")));
  assert.equal(error.constructor, HippocampusError);
  assert.equal(error.type, "Forbidden");
  assert.equal(error.status, 403);
});

test("an unreachable service is ServiceUnavailable (a StoreError); healthy() is false", async () => {
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve)); // a loopback port nobody listens on
  const nowhere = new Client(`http://127.0.0.1:${port}`, { api_key: OPERATOR, timeout: 5 });
  const error = await failure(nowhere.page("anyone"));
  assert.ok(error instanceof ServiceUnavailable && error instanceof StoreError);
  assert.match(error.message, new RegExp(`cannot reach the Hippocampus service at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
  assert.equal(await nowhere.healthy(), false);
  assert.equal(String(new Client(URL, { api_key: OPERATOR })).includes(OPERATOR), false); // never shows the key
});
