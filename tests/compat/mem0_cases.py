"""The mem0 compatibility suite's data: memories with metadata, and the filter examples of mem0's current
documentation (docs/open-source/features/metadata-filtering.mdx, and the Platform filter page for
`created_at` and `categories`), each written as mem0 documents it, with the memories it must answer as
mem0's default store (Qdrant) evaluates it: a condition on a missing key is false, its `ne`, `nin` and
`NOT` true; `NOT` with a list means none of them holds."""

from __future__ import annotations

from typing import Any

# name -> (entity ids given to add, metadata). Every text is "note <name> ...", so a search for "note" sees them all.
ROWS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "a1": ({"user_id": "alice"}, {"category": "preferences"}),
    "a2": ({"user_id": "alice"}, {"category": "work", "priority": 7, "status": "active", "title": "weekly meeting notes",
                                  "description": "An IMPORTANT review", "tags": ["urgent", "team"], "score": 0.9,
                                  "confidence": 0.5, "rating": 3, "archived": False, "content": "meeting with the board"}),
    "a3": ({"user_id": "alice"}, {"category": "work", "priority": 9, "status": "completed"}),
    "a4": ({"user_id": "alice"}, {"category": "food", "status": "active", "priority": 2}),
    "a5": ({"user_id": "alice"}, {"category": "travel", "status": "archived"}),
    "a6": ({"user_id": "alice"}, {"category": "personal", "priority": 5, "status": "deleted", "deadline": "due today"}),
    "a7": ({"user_id": "alice"}, {"category": "archived", "priority": 6}),
    "a8": ({"user_id": "alice"}, {"category": "general", "description": "a complex text search example"}),
    "a9": ({"user_id": "alice"}, {"status": "active", "archived": True}),
    "a10": ({"user_id": "alice"}, {"category": "urgent", "priority": 1}),
    "p1": ({"user_id": "project_manager"}, {"project": "alpha", "priority": 8, "status": "open", "assignee": "alice"}),
    "p2": ({"user_id": "project_manager"}, {"project": "", "priority": 9, "status": "open", "assignee": "bob"}),
    "p3": ({"user_id": "project_manager"}, {"project": "alpha", "priority": 10, "status": "completed", "assignee": "bob"}),
    "p4": ({"user_id": "project_manager"}, {"project": "beta", "priority": 9, "status": "open", "assignee": "alice"}),
    "p5": ({"user_id": "project_manager"}, {"project": "alpha", "priority": 8, "status": "open", "assignee": "carol"}),
    "s1": ({"agent_id": "support_bot"}, {"ticket_status": "open", "priority": "high", "created_date": "2024-03-05",
                                         "category": "billing"}),
    "s2": ({"agent_id": "support_bot"}, {"ticket_status": "resolved", "priority": "high", "created_date": "2024-03-05"}),
    "s3": ({"agent_id": "support_bot"}, {"ticket_status": "open", "priority": "critical", "created_date": "2023-12-31"}),
    "s4": ({"agent_id": "support_bot"}, {"ticket_status": "open", "priority": "critical", "created_date": "2024-02-01",
                                         "category": "spam"}),
    "s5": ({"agent_id": "support_bot"}, {"ticket_status": "open", "priority": "low", "created_date": "2024-05-01"}),
    "r1": ({"user_id": "reader123"}, {"genre": "sci-fi", "rating": 4.5, "read_status": "unread", "language": "english"}),
    "r2": ({"user_id": "reader123"}, {"genre": "drama", "author": "my favorite author", "rating": 4, "read_status": "reading",
                                      "language": "english"}),
    "r3": ({"user_id": "reader123"}, {"genre": "fantasy", "rating": 3.9, "read_status": "unread", "language": "english"}),
    "r4": ({"user_id": "reader123"}, {"genre": "fantasy", "rating": 5, "read_status": "completed", "language": "english"}),
    "r5": ({"user_id": "reader123"}, {"genre": "sci-fi", "rating": 5, "read_status": "unread", "language": "french"}),
}


def text_of(name: str) -> str:
    return f"note {name} kept for the filter examples"


ALICE = {n for n in ROWS if n.startswith("a")}

# (the example's name, filters exactly as documented, the memories it answers)
EXAMPLES: list[tuple[str, dict[str, Any], set[str]]] = [
    ("metadata selector", {"user_id": "alice", "category": "preferences"}, {"a1"}),
    ("greater than / less than", {"user_id": "alice", "score": {"gt": 0.8}, "priority": {"gte": 5},
                                  "confidence": {"lt": 0.9}, "rating": {"lte": 3}}, {"a2"}),
    ("equality operators", {"user_id": "alice", "status": {"eq": "active"}, "archived": {"ne": True}}, {"a2", "a4"}),
    ("in / not in", {"user_id": "alice", "category": {"in": ["food", "travel", "entertainment"]},
                     "status": {"nin": ["deleted", "archived"]}}, {"a4"}),
    ("text matching", {"user_id": "alice", "title": {"contains": "meeting"}, "description": {"icontains": "important"},
                       "tags": {"contains": "urgent"}}, {"a2"}),
    ("wildcard", {"user_id": "alice", "category": "*"}, ALICE - {"a9"}),
    ("logical AND", {"user_id": "alice", "AND": [{"category": "work"}, {"priority": {"gte": 7}},
                                                 {"status": {"ne": "completed"}}]}, {"a2"}),
    ("logical OR", {"user_id": "alice", "OR": [{"category": "urgent"}, {"priority": {"gte": 9}},
                                               {"deadline": {"contains": "today"}}]}, {"a3", "a6", "a10"}),
    ("logical NOT", {"user_id": "alice", "NOT": [{"category": "archived"}, {"status": "deleted"}]}, ALICE - {"a6", "a7"}),
    ("complex nested logic", {"user_id": "alice", "AND": [{"OR": [{"category": "work"}, {"category": "personal"}]},
                                                          {"priority": {"gte": 5}}, {"NOT": [{"status": "archived"}]}]},
     {"a2", "a3", "a6"}),
    ("indexed fields first", {"user_id": "alice", "AND": [{"category": "work"}, {"content": {"contains": "meeting"}}]}, {"a2"}),
    ("complex operations first", {"user_id": "alice", "AND": [{"description": {"icontains": "complex text search"}}]}, {"a8"}),
    ("before v1.0.0", {"user_id": "alice", "category": "work", "status": "active"}, {"a2"}),
    ("after v1.0.0", {"user_id": "alice", "AND": [{"category": "work"}, {"status": {"ne": "archived"}},
                                                  {"priority": {"gte": 5}}]}, {"a2", "a3"}),
    ("project management", {"user_id": "project_manager", "AND": [
        {"project": {"in": ["alpha", ""]}}, {"priority": {"gte": 8}}, {"status": {"ne": "completed"}},
        {"OR": [{"assignee": "alice"}, {"assignee": "bob"}]}]}, {"p1", "p2"}),
    ("customer support", {"agent_id": "support_bot", "AND": [
        {"ticket_status": {"ne": "resolved"}}, {"priority": {"in": ["high", "critical"]}},
        {"created_date": {"gte": "2024-01-01"}}, {"NOT": [{"category": "spam"}]}]}, {"s1"}),
    ("content recommendation", {"user_id": "reader123", "AND": [
        {"OR": [{"genre": {"in": ["sci-fi", "fantasy"]}}, {"author": {"contains": "favorite"}}]},
        {"rating": {"gte": 4.0}}, {"read_status": {"ne": "completed"}}, {"language": "english"}]}, {"r1", "r2"}),
    ("invalid operator fallback", {"user_id": "alice", "category": "general"}, {"a8"}),
    ("platform created_at range", {"user_id": "alice", "created_at": {"gte": "2024-07-01"}}, ALICE),
    ("platform created_at window", {"user_id": "alice", "AND": [{"created_at": {"gte": "2024-01-01T00:00:00Z"}},
                                                                {"created_at": {"lt": "2024-02-01T00:00:00Z"}}]}, set()),
    ("platform agent wildcard", {"user_id": "alice", "NOT": {"agent_id": "*"}}, ALICE),
]

# Where mem0's own Memory on its default store (tests/compat/reference.py) does not give the documented answer, and why:
# the suite's answer is the documented one (for "*", the README's and pgvector's "the key exists").
REFERENCE_DIFFERS: dict[str, str] = {
    "equality operators": "mem0 2.2.1 on Qdrant raises a pydantic ValidationError for {'ne': True} (MatchExcept takes no booleans)",
    "wildcard": "mem0's page: on Qdrant '*' is a no-op that also passes memories without the key",
    "platform agent wildcard": "NOT over one object is the Platform's form; mem0's open-source Memory takes NOT with a list only",
}

# The documented "handle invalid operators" example: refused with a ValueError.
INVALID = {"user_id": "alice", "invalid_operator": {"unknown": "value"}}
