"""Agent integration: helpers an agent's loop calls around the memory, above the facade.

- `recall_loop(memory, messages, user_id)`: before answering, recall in a few model-planned rounds
  what the answer needs; a prompt block inside <data> delimiters comes back.
- `Session(memory, user_id, chat_id)`: working memory of the last messages; what the session tells
  about the user is extracted at its end, when the buffer fills, or on `save()`, idempotently.

Both take a `Memory` (or a `Client` with `llm=`) and use only its public verbs; memory or model
failures never break a turn: they are warnings in the result, logged.
"""

from .recall import RecallResult, RecallRound, recall_loop
from .session import Session, SessionReport

__all__ = ["recall_loop", "RecallResult", "RecallRound", "Session", "SessionReport"]
