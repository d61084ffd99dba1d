// What every test file shares: the service under test, its keys and fresh user ids. The pytest test
// tests/clients/test_typescript_client.py starts a real `hippocampus serve` on loopback and sets these.
import { randomUUID } from "node:crypto";

import { Client } from "../dist/src/index.js";

function need(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/clients/test_typescript_client.py`);
  return value;
}

export const SERVICE_URL = need("HIPPOCAMPUS_TEST_URL");
/** the operator key ("*": every user) */
export const OPERATOR = need("HIPPOCAMPUS_TEST_KEY_OPERATOR");
/** tenant A's key: users TENANT_A_USERS only */
export const KEY_A = need("HIPPOCAMPUS_TEST_KEY_A");
export const TENANT_A_USERS = need("HIPPOCAMPUS_TEST_USERS_A").split(",");
/** tenant B's key: users TENANT_B_USERS only */
export const KEY_B = need("HIPPOCAMPUS_TEST_KEY_B");
export const TENANT_B_USERS = need("HIPPOCAMPUS_TEST_USERS_B").split(",");

/** A client with the operator key. */
export const operator = () => new Client(SERVICE_URL, { api_key: OPERATOR });

/** A user id no other test uses (the operator key may touch any). */
export const freshUser = (label) => `ts-${label}-${randomUUID().slice(0, 8)}`;
