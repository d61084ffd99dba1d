"""Agent and run scopes (docs/agents.md): pure rules, no store.

A memory written with an `agent_id` belongs to that agent within its user; one written without is the
user's shared memory. Both ids live in the memory's metadata (`metadata["agent_id"]`, `metadata["run_id"]`,
keys the library owns: validation.OWNED_KEYS), so a store written before agents existed opens unchanged
and all its memories read as shared. A read names an agent and a scope:

- "own": the agent's memories only;
- "shared": the user's memories without an agent;
- "both" (default): the two together; without an agent, "both" is every memory of the user.

The scope becomes a filter in mem0's syntax (store/filter_ops.py) ANDed to the caller's, so every
verb and face reads it the same way and the injection-proof builder renders it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..errors import InvalidInput

AGENT_KEY = "agent_id"
RUN_KEY = "run_id"
AgentScope = Literal["own", "shared", "both"]
SCOPES: tuple[str, ...] = ("own", "shared", "both")


def check_scope(agent_id: str | None, agent_scope: Any) -> AgentScope:
    """The scope, checked: one of SCOPES; "own" needs an agent."""
    scope = "both" if agent_scope is None else agent_scope
    if scope not in SCOPES:
        raise InvalidInput(f"agent_scope must be one of {list(SCOPES)}, got {agent_scope!r}")
    if scope == "own" and agent_id is None:
        raise InvalidInput("agent_scope 'own' needs an agent_id")
    return scope  # type: ignore[return-value]


def check_ids(agent_id: Any, run_id: Any) -> tuple[str | None, str | None]:
    """agent_id and run_id follow user_id's rules (validation.check_id); None means none."""
    from ..validation import check_id

    return (None if agent_id is None else check_id("agent_id", agent_id),
            None if run_id is None else check_id("run_id", run_id))


def stamp(metadata: Mapping[str, Any], agent_id: str | None, run_id: str | None) -> dict[str, Any]:
    """Metadata with the writer's agent and run (absent ones stay absent: no agent = shared)."""
    out = dict(metadata)
    if agent_id is not None:
        out[AGENT_KEY] = agent_id
    if run_id is not None:
        out[RUN_KEY] = run_id
    return out


def carried(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The agent and run keys of a source memory, for what is derived from it (a distilled fact)."""
    return {k: metadata[k] for k in (AGENT_KEY, RUN_KEY) if isinstance(metadata.get(k), str)}


def agent_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The agent a memory belongs to, or None for a shared one."""
    value = (metadata or {}).get(AGENT_KEY)
    return value if isinstance(value, str) else None


def scope_filter(agent_id: str | None, agent_scope: AgentScope = "both", run_id: str | None = None) -> dict[str, Any] | None:
    """The scope as a filter in mem0's syntax, or None when it restricts nothing."""
    shared = {AGENT_KEY: {"exists": False}}
    parts: list[dict[str, Any]] = []
    if agent_scope == "shared":
        parts.append(shared)
    elif agent_id is not None:
        parts.append({AGENT_KEY: agent_id} if agent_scope == "own" else {"OR": [{AGENT_KEY: agent_id}, shared]})
    if run_id is not None:
        parts.append({RUN_KEY: run_id})
    return None if not parts else parts[0] if len(parts) == 1 else {"AND": parts}


def with_scope(filters: dict[str, Any] | None, agent_id: str | None, agent_scope: AgentScope = "both",
               run_id: str | None = None) -> dict[str, Any] | None:
    """The caller's filters ANDed with the scope (the caller's top-level keys kept where they are)."""
    scope = scope_filter(agent_id, agent_scope, run_id)
    if scope is None:
        return filters
    if not filters:
        return scope
    if "AND" in filters:
        return {"AND": [filters, scope]}
    return {**filters, "AND": [scope]}


def visible(metadata: Mapping[str, Any] | None, agent_id: str | None, agent_scope: AgentScope = "both",
            run_id: str | None = None) -> bool:
    """The scope over one memory's metadata, in Python (the twin of scope_filter)."""
    owner = agent_of(metadata)
    if agent_scope == "shared":
        ok = owner is None
    elif agent_scope == "own":
        ok = owner == agent_id
    else:
        ok = agent_id is None or owner is None or owner == agent_id
    return ok and (run_id is None or (metadata or {}).get(RUN_KEY) == run_id)


def same_agent(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Consolidation's rule: two memories may merge or be judged together only within one agent (or both
    shared); a pair from two agents, or an agent's and a shared one, never is a candidate."""
    return agent_of(a) == agent_of(b)
