/**
 * hippocampus-client: the verbs of the Python `Client` (hippocampus/remote/client.py) over fetch, for Node 18+,
 * Deno and browsers, with no runtime dependency.
 *
 * Naming: methods are the Python verbs in camelCase (`add`, `search`, `markUsed`, `exportMd`, ...); arguments keep
 * the Python (and wire) names, snake_case. An argument the Python verb requires is positional, in the same order;
 * every optional one goes in a trailing options object by its Python name, and is sent to the service as given
 * (undefined members left out, so the service's defaults apply). So an argument the service learns later passes
 * through unchanged; `npm run generate` adds it to the types.
 *
 * Ids are `Id` (number | string): see wire.ts. Errors are the Python library's classes: see errors.ts.
 */

import { errorOf, InvalidInput, ServiceUnavailable } from "./errors.js";
import type { components, paths } from "./schema.js";
import { type Id, type Loose, parseJson, queryValue, stringifyJson, type Wire } from "./wire.js";

export * from "./errors.js";
export { parseJson, quoteUnsafeIntegers, type Id, type Loose, type Wire } from "./wire.js";
export type { components, operations, paths } from "./schema.js";

type S = components["schemas"];
export type AddResult = Wire<S["AddResult"]>;
export type MemoryRecord = Wire<S["MemoryRecord"]>;
export type SearchHit = Wire<S["SearchHit"]>;
export type SearchResult = Wire<S["SearchResult"]>;
export type MemoryPage = Wire<S["MemoryPage"]>;
export type HistoryEvent = Wire<S["HistoryEvent"]>;
export type ObserveResult = Wire<S["ObserveResult"]>;
export type ConsolidationStats = Wire<S["ConsolidationStats"]>;
export type DecayStats = Wire<S["DecayStats"]>;
export type UndoResult = Wire<S["UndoResult"]>;
export type GraphView = Wire<S["GraphView"]>;
export type GraphStats = Wire<S["GraphStats"]>;
export type ImportReport = Wire<S["ImportReport"]>;
export type ExportReply = Wire<S["ExportReply"]>;
export type BatchUpdateResult = Wire<S["BatchUpdateResult"]>;
export type BatchDeleteResult = Wire<S["BatchDeleteResult"]>;

/** A turn: a string, or [{role, content}, ...]. */
export type Messages = S["AddRequest"]["messages"];
/** A time: epoch seconds, ISO 8601 text, or a Date (sent as epoch seconds). */
export type Timestamp = number | string | Date;

/** The optional fields of a request body or query, by their wire names; `ts` and `now` also take a Date, and
 * `filters` an object where the service takes it as JSON text (a query string). */
export type Options<T, Positional extends keyof T = never> = {
  [K in Exclude<keyof T, Positional>]?: K extends "ts" | "now"
    ? Exclude<T[K], undefined> | Date
    : K extends "filters"
      ? Loose<T[K]> | Record<string, unknown>
      : Loose<T[K]>;
};
type Query<P extends keyof paths, M extends "get" | "post"> = paths[P][M] extends { parameters: { query?: infer Q } }
  ? NonNullable<Q>
  : never;

export type AddOptions = Options<S["AddRequest"], "messages" | "user_id">;
export type SearchOptions = Options<S["SearchRequest"], "query" | "user_id">;
export type PageOptions = Options<Query<"/v1/memories", "get">, "user_id">;
export type ObserveOptions = Omit<Options<S["ObserveRequest"], "messages" | "user_id">, "shown"> & {
  /** the memories shown for this turn, best first: ids or search hits */
  shown?: ReadonlyArray<Id | SearchHit | { id: Id }>;
};
export type ContextOptions = Options<Query<"/v1/context", "get">, "user_id">;
export type GraphOptions = Options<Query<"/v1/graph", "get">, "user_id">;
export type ExportMdOptions = Options<Query<"/v1/export/md", "get">, "user_id">;
/** One item of addMany: as for add (messages or text, user_id, chat_id, ...). */
export type AddItem = { user_id: string; [key: string]: unknown };
/** One item of updateMany. */
export type UpdateItem = { memory_id: Id; text: string; metadata?: Record<string, unknown> | null };

export interface ClientOptions {
  /** The API key, sent as `Authorization: Bearer <key>`; default: HIPPOCAMPUS_API_KEY where the runtime has an environment. */
  api_key?: string;
  /** Seconds a request may take (default 120: add with infer waits for the LLM); consolidate, decay and buildGraph wait as long as they run. */
  timeout?: number;
  /** The fetch to use (default: the global one), e.g. one with a proxy agent. */
  fetch?: typeof globalThis.fetch;
}

export const DEFAULT_URL = "http://127.0.0.1:8765";
export const API_PREFIX = "/v1";
/** The most items one addMany request may hold: the service's contract/wire.MAX_ADD_MANY (it answers InvalidInput
 * 422 above it); tests/clients/test_typescript_client.py checks that the two agree. */
export const MAX_ADD_MANY = 1000;
const DEFAULT_TIMEOUT_S = 120;
const PAGE = 1000;
const MAX_ID = 2n ** 63n;

interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  params?: Record<string, unknown>;
  body?: unknown;
  /** seconds; null: no limit */
  timeout?: number | null;
}

function env(name: string): string | undefined {
  try {
    const value = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
    return value || undefined;
  } catch {
    return undefined; // Deno without --allow-env
  }
}

/** An id for the URL path, checked as the Python Client checks it: an integer in 0 .. 2^63 - 1 (digits in a string too). */
function checkId(value: unknown, name = "memory_id"): string {
  let digits: string | undefined;
  if (typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new InvalidInput(`${name} ${value} is beyond JavaScript's exact integers: pass the id as the string the service sent`);
  }
  if (typeof value === "number" && Number.isInteger(value)) digits = String(value);
  else if (typeof value === "bigint") digits = value.toString();
  else if (typeof value === "string" && /^\s*-?\d+\s*$/.test(value)) digits = value.trim();
  if (digits === undefined) throw new InvalidInput(`${name} must be an integer, got ${JSON.stringify(value) ?? String(value)}`);
  const id = BigInt(digits);
  if (id < 0n || id >= MAX_ID) throw new InvalidInput(`${name} out of range: ${digits}`);
  return id.toString();
}

/** A user id for the query string, where any value would become text: it must be a string. */
function checkUser(value: unknown): string {
  if (typeof value !== "string") throw new InvalidInput(`user_id must be a string, got ${value === null ? "null" : typeof value}`);
  return value;
}

/** A Memory served by a Hippocampus service (`hippocampus serve`): every verb is async. */
export class Client {
  readonly url: string;
  readonly timeout: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof globalThis.fetch;

  constructor(url?: string, options: ClientOptions = {}) {
    this.url = (url || env("HIPPOCAMPUS_SERVER") || DEFAULT_URL).replace(/\/+$/, "");
    const key = options.api_key ?? env("HIPPOCAMPUS_API_KEY");
    this.#headers = { Accept: "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}) };
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_S;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  toString(): string {
    return `Client(${JSON.stringify(this.url)})`; // never the key
  }

  // ---------------------------------------------------------------- writing
  /** Remember a turn (Memory.add). InvalidInput for a bad argument or a library-owned metadata key. */
  async add(messages: Messages, user_id: string, options: AddOptions = {}): Promise<AddResult> {
    return (await this.#send({ method: "POST", path: "/memories", body: { ...options, messages, user_id } })) as AddResult;
  }

  /** Store many turns as-is; the ids in input order. A batch over MAX_ADD_MANY items (what one request may embed)
   * goes as several requests, each checked whole before it is written: InvalidInput for a bad item (the requests
   * before it stay stored), as the Python Client. */
  async addMany(items: ReadonlyArray<AddItem>, options: Options<S["AddManyRequest"], "items"> = {}): Promise<Id[]> {
    if (!Array.isArray(items)) throw new InvalidInput(`items must be a list, got ${typeof items}`);
    const ids: Id[] = [];
    for (let start = 0; start === 0 || start < items.length; start += MAX_ADD_MANY) {
      const part = items.slice(start, start + MAX_ADD_MANY);
      const reply = (await this.#send({ method: "POST", path: "/memories/batch", body: { ...options, items: part } })) as { ids?: Id[] };
      for (const id of reply.ids ?? []) ids.push(id);
    }
    return ids;
  }

  /** Replace a memory's text; the id stays, the old text goes to history. NotFound when missing or another user's. */
  async update(memory_id: Id, text: string, user_id: string, options: Options<S["UpdateRequest"], "user_id" | "text"> = {}): Promise<MemoryRecord> {
    const path = `/memories/${checkId(memory_id)}`;
    return (await this.#send({ method: "PATCH", path, body: { ...options, user_id, text } })) as MemoryRecord;
  }

  /** Update up to 1,000 memories, a result per item. InvalidInput, before anything changes, for a malformed item. */
  async updateMany(items: ReadonlyArray<UpdateItem>, user_id: string): Promise<BatchUpdateResult> {
    if (!Array.isArray(items)) throw new InvalidInput(`items must be a list, got ${typeof items}`);
    return (await this.#send({ method: "POST", path: "/memories/batch/update", body: { user_id, items } })) as BatchUpdateResult;
  }

  /** Delete one memory (its history stays). NotFound when it is missing or another user's. */
  async delete(memory_id: Id, user_id: string): Promise<void> {
    await this.#send({ method: "DELETE", path: `/memories/${checkId(memory_id)}`, params: { user_id: checkUser(user_id) } });
  }

  /** Delete up to 1,000 memories, a result per id; a string is ids separated by commas or spaces. */
  async deleteMany(memory_ids: ReadonlyArray<Id> | string, user_id: string): Promise<BatchDeleteResult> {
    const given = typeof memory_ids === "string" ? memory_ids.split(/[\s,;，；]+/).filter(Boolean) : memory_ids;
    if (!Array.isArray(given)) throw new InvalidInput(`memory_ids must be a list, got ${typeof memory_ids}`);
    const ids = [...new Set(given.map((id) => checkId(id)))].map((id) => (Number.isSafeInteger(Number(id)) ? Number(id) : id));
    return (await this.#send({ method: "POST", path: "/memories/batch/delete", body: { user_id, memory_ids: ids } })) as BatchDeleteResult;
  }

  /** Erase every memory of this user and its history; how many memories went. */
  async reset(user_id: string): Promise<number> {
    const reply = (await this.#send({ method: "DELETE", path: "/memories", params: { user_id: checkUser(user_id) } })) as { deleted: number };
    return Number(reply.deleted);
  }

  /** Report which recalled memories the answer used. NotFound, before anything changes, for an unknown or another user's id. */
  async markUsed(memory_ids: Id | ReadonlyArray<Id>, user_id: string, options: Options<S["MarkUsedRequest"], "user_id" | "memory_ids"> = {}): Promise<MemoryRecord[]> {
    const ids = Array.isArray(memory_ids) ? [...memory_ids] : [memory_ids];
    return (await this.#send({ method: "POST", path: "/memories/used", body: { ...options, user_id, memory_ids: ids } })) as MemoryRecord[];
  }

  /** After a turn, one KnowledgeMonitor call (Memory.observe); `shown` takes ids or search hits. */
  async observe(messages: Messages, user_id: string, options: ObserveOptions = {}): Promise<ObserveResult> {
    const { shown, ...rest } = options;
    if (typeof (shown as unknown) === "string") throw new InvalidInput("shown must be a list of memory ids or search hits");
    const ids = (shown ?? []).map((s) => (typeof s === "object" && s !== null ? ("memory" in s ? s.memory.id : s.id) : s));
    return (await this.#send({ method: "POST", path: "/observe", body: { ...rest, messages, user_id, shown: ids } })) as ObserveResult;
  }

  // ---------------------------------------------------------------- reading
  /** Recall memories for a query (Memory.search). */
  async search(query: string, user_id: string, options: SearchOptions = {}): Promise<SearchResult> {
    return (await this.#send({ method: "POST", path: "/search", body: { ...options, query, user_id } })) as SearchResult;
  }

  /** One memory. NotFound when it is missing or another user's (another tenant's too). */
  async get(memory_id: Id, user_id: string): Promise<MemoryRecord> {
    const path = `/memories/${checkId(memory_id)}`;
    return (await this.#send({ method: "GET", path, params: { user_id: checkUser(user_id) } })) as MemoryRecord;
  }

  /** A page of the user's memories, oldest event first. */
  async page(user_id: string, options: PageOptions = {}): Promise<MemoryPage> {
    return (await this.#send({ method: "GET", path: "/memories", params: { ...options, user_id: checkUser(user_id) } })) as MemoryPage;
  }

  /** Every memory of this user, a page at a time. */
  async *iterAll(user_id: string, options: Omit<PageOptions, "offset" | "limit"> = {}): AsyncGenerator<MemoryRecord> {
    let offset: number | null | undefined = 0;
    while (offset !== null && offset !== undefined) {
      const page: MemoryPage = await this.page(user_id, { ...options, offset, limit: PAGE });
      yield* page.items ?? [];
      offset = page.next_offset;
    }
  }

  /** Every memory of this user, oldest event first. */
  async getAll(user_id: string, options: Omit<PageOptions, "offset" | "limit"> = {}): Promise<MemoryRecord[]> {
    const out: MemoryRecord[] = [];
    for await (const record of this.iterAll(user_id, options)) out.push(record);
    return out;
  }

  /** Every change to this memory, oldest first. NotFound when there is no history for this user. */
  async history(memory_id: Id, user_id: string): Promise<HistoryEvent[]> {
    const path = `/memories/${checkId(memory_id)}/history`;
    return (await this.#send({ method: "GET", path, params: { user_id: checkUser(user_id) } })) as HistoryEvent[];
  }

  /** Memories by kind; with an operator key also the service's own figures. */
  async stats(options: Options<Query<"/v1/stats", "get">> = {}): Promise<Record<string, unknown>> {
    if (options.user_id !== undefined && options.user_id !== null) checkUser(options.user_id);
    return (await this.#send({ method: "GET", path: "/stats", params: options })) as Record<string, unknown>;
  }

  /** The prompt block of the user's memories (Memory.context); empty when nothing qualifies. */
  async context(user_id: string, options: ContextOptions = {}): Promise<string> {
    const reply = (await this.#send({ method: "GET", path: "/context", params: { ...options, user_id: checkUser(user_id) } })) as { context: string };
    return String(reply.context);
  }

  /** The user's entities and triples (graph memory). */
  async graph(user_id: string, options: GraphOptions = {}): Promise<GraphView> {
    return (await this.#send({ method: "GET", path: "/graph", params: { ...options, user_id: checkUser(user_id) } })) as GraphView;
  }

  // ---------------------------------------------------------------- lifecycle, consolidation, graph build
  /** Run consolidation in the service (after any run in progress); waits as long as it runs. */
  async consolidate(options: Options<S["ConsolidateRequest"]> = {}): Promise<ConsolidationStats> {
    return (await this.#send({ method: "POST", path: "/consolidate", body: options, timeout: null })) as ConsolidationStats;
  }

  /** Archive and forget what has decayed, for one user or every user the key may touch. */
  async decay(options: Options<S["DecayRequest"]> = {}): Promise<DecayStats> {
    return (await this.#send({ method: "POST", path: "/decay", body: options, timeout: null })) as DecayStats;
  }

  /** Set a memory's category and/or importance. InvalidInput for a bad value or neither. */
  async curate(memory_id: Id, user_id: string, options: Options<S["CurateRequest"], "user_id"> = {}): Promise<MemoryRecord> {
    const path = `/memories/${checkId(memory_id)}/curate`;
    return (await this.#send({ method: "POST", path, body: { ...options, user_id } })) as MemoryRecord;
  }

  /** Bring back a memory that decay forgot. InvalidInput when it was not forgotten or was restored already. */
  async restore(memory_id: Id, user_id: string): Promise<MemoryRecord> {
    const path = `/memories/${checkId(memory_id)}/restore`;
    return (await this.#send({ method: "POST", path, params: { user_id: checkUser(user_id) } })) as MemoryRecord;
  }

  /** Put back the state from before one history event. NotFound when the event is unknown or another user's. */
  async undo(event_id: Id, user_id: string): Promise<UndoResult> {
    const path = `/history/${checkId(event_id, "event_id")}/undo`;
    return (await this.#send({ method: "POST", path, params: { user_id: checkUser(user_id) } })) as UndoResult;
  }

  /** Read new memories into the graph now; waits as long as it runs. */
  async buildGraph(options: Options<S["BuildGraphRequest"]> = {}): Promise<GraphStats> {
    return (await this.#send({ method: "POST", path: "/graph/build", body: options, timeout: null })) as GraphStats;
  }

  // ---------------------------------------------------------------- export and import: text, never paths
  /** This user's memories as MEMORY.md text (the Python Client can also write a file; here the caller does). */
  async exportMd(user_id: string, options: ExportMdOptions = {}): Promise<string> {
    const reply = (await this.#send({ method: "GET", path: "/export/md", params: { ...options, user_id: checkUser(user_id) } })) as ExportReply;
    return String(reply.text);
  }

  /** Bring an edited MEMORY.md back: its text. */
  async importMd(user_id: string, text: string): Promise<ImportReport> {
    return (await this.#send({ method: "POST", path: "/import/md", body: { user_id, text } })) as ImportReport;
  }

  /** This user's memories and history as JSONL: {user_id, count (memories), text}. */
  async exportJsonl(user_id: string): Promise<ExportReply> {
    return (await this.#send({ method: "GET", path: "/export/jsonl", params: { user_id: checkUser(user_id) } })) as ExportReply;
  }

  /** Restore a JSONL backup (its text) as this user's memories. InvalidInput naming a bad line; nothing changes. */
  async importJsonl(user_id: string, text: string): Promise<ImportReport> {
    return (await this.#send({ method: "POST", path: "/import/jsonl", body: { user_id, text } })) as ImportReport;
  }

  // ---------------------------------------------------------------- the service
  /** Whether the service answers /healthz. */
  async healthy(): Promise<boolean> {
    try {
      const response = await this.#fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      return response.status === 200;
    } catch {
      return false;
    }
  }

  async #send(call: Call): Promise<unknown> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(call.params ?? {})) {
      if (value !== undefined && value !== null) query.append(key, queryValue(value));
    }
    const search = query.toString();
    const url = `${this.url}${API_PREFIX}${call.path}${search ? `?${search}` : ""}`;
    const headers: Record<string, string> = { ...this.#headers };
    let body: string | undefined;
    if (call.body !== undefined) {
      body = stringifyJson(call.body);
      headers["Content-Type"] = "application/json";
    }
    const seconds = call.timeout === undefined ? this.timeout : call.timeout;
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method: call.method,
        headers,
        body,
        signal: seconds === null ? undefined : AbortSignal.timeout(seconds * 1000),
      });
      text = await response.text();
    } catch (cause) {
      const kind = cause instanceof Error ? cause.name : typeof cause;
      const inner = cause instanceof Error && cause.cause instanceof Error ? ` (${cause.cause.message})` : ""; // Node: the socket's error
      const message = (cause instanceof Error ? cause.message : String(cause)) + inner;
      throw new ServiceUnavailable(`cannot reach the Hippocampus service at ${this.url}: ${kind}: ${message}`, { cause });
    }
    if (response.status >= 400) throw errorOf(response.status, text);
    return text ? parseJson(text) : null;
  }
}
