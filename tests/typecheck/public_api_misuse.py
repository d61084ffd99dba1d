"""Deliberate misuse the type checker must refuse (tests/test_typing.py expects one error per marked line):
proof that mypy reads the faces' signatures, not methods put on the classes at run time."""

from __future__ import annotations

from hippocampus import AsyncMemory, Client, Memory, SearchResult


def misuse(memory: Memory, client: Client, embedded: AsyncMemory) -> None:
    client.search(query=1, user_id="alice")  # error: arg-type
    client.serch("tea?", "alice")  # error: attr-defined
    found: int = client.search("tea?", "alice")  # error: assignment
    client.add("hi", "alice", "default", None, None, True)  # error: call-arg
    memory.get("seven", "alice")  # error: arg-type
    result: SearchResult = embedded.search("tea?", "alice")  # error: assignment
    print(found, result)
