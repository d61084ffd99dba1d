"""Faces for agent frameworks, each over the `Memory` facade only (docs/integrations.md):

- `hippocampus.integrations.tools`: recall / remember / forget as JSON-schema tools (OpenAI and
  Anthropic formats) and `dispatch`, for any framework; no extra needed.
- `hippocampus.integrations.langgraph`: `HippocampusStore`, a LangGraph `BaseStore` (extra `[langgraph]`).
- `hippocampus.integrations.openai_agents`: `HippocampusSession` and `memory_tools` for the OpenAI
  Agents SDK (extra `[openai-agents]`).

Nothing is imported here: each module imports its framework when it is imported itself.
"""
