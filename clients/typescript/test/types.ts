// Compile-time checks of the public types (tsc compiles this file with src; it is never run): ids are `Id`,
// other numbers stay numbers, every reply field is present, options are checked by name.
import {
  Client,
  HippocampusError,
  NotFound,
  type AddResult,
  type BatchDeleteResult,
  type HistoryEvent,
  type Id,
  type MemoryPage,
  type MemoryRecord,
  type ObserveResult,
  type SearchResult,
} from "../src/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expect<T extends true>(): T | void {}

expect<Equal<MemoryRecord["id"], Id>>();
expect<Equal<MemoryRecord["ts"], number>>();
expect<Equal<MemoryRecord["text"], string>>();
expect<Equal<MemoryRecord["metadata"], { [key: string]: unknown }>>();
expect<Equal<AddResult["ids"], Id[]>>();
expect<Equal<SearchResult["episodic"][number]["score"], number>>();
expect<Equal<SearchResult["episodic"][number]["memory"], MemoryRecord>>();
expect<Equal<HistoryEvent["event_id"], Id | null>>();
expect<Equal<HistoryEvent["memory_id"], Id>>();
expect<Equal<MemoryPage["next_offset"], number | null>>();
expect<Equal<ObserveResult["added"], Id[]>>();
expect<Equal<ObserveResult["llm_calls"], number>>();
expect<Equal<BatchDeleteResult["not_found"], Id[]>>();
expect<Equal<Awaited<ReturnType<Client["addMany"]>>, Id[]>>();
expect<Equal<Awaited<ReturnType<Client["context"]>>, string>>();
expect<Equal<Awaited<ReturnType<Client["delete"]>>, void>>();

export async function usage(memory: Client): Promise<void> {
  const added = await memory.add("I moved to Berlin in May", "alice", { chat_id: "c1", ts: new Date(), infer: false });
  const id: Id = added.ids[0] ?? 0;
  await memory.search("Berlin", "alice", { limit: 3, filters: { chat_id: "c1" }, memory_types: ["episodic"] });
  await memory.page("alice", { limit: 10, filters: { priority: { gte: 3 } } });
  await memory.markUsed([id, "4611686018427387905"], "alice");
  await memory.observe("Please remember my dog is Rex", "alice", { shown: (await memory.search("dog", "alice")).episodic });
  // @ts-expect-error a misspelt option is caught
  await memory.add("text", "alice", { chat: "c1" });
  // @ts-expect-error user_id is required
  await memory.search("Berlin");
  // @ts-expect-error ids are numbers or digit strings
  await memory.get(true, "alice");
  try {
    await memory.get(id, "alice");
  } catch (error) {
    if (error instanceof NotFound) expect<Equal<typeof error.status, number | undefined>>();
    if (error instanceof HippocampusError) expect<Equal<typeof error.type, string>>();
  }
}
