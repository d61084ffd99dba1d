"""What the agent tests share: a Memory whose LLM is a scripted model configured like a real endpoint."""

from __future__ import annotations

import uuid

import pytest

from hippocampus import Memory
from tests.consolidation_helpers import ScriptedChat


@pytest.fixture
def modelled(shared_db, embedder):
    """(memory, chat): a fresh collection, the model scripted per result schema (ScriptedChat)."""
    chat = ScriptedChat()
    m = Memory(milvus_uri=str(shared_db), collection_name=f"ag_{uuid.uuid4().hex[:10]}", embedder=embedder, llm=chat,
               llm_provider="openai", llm_base_url="http://127.0.0.1:9/v1")
    yield m, chat
    m.close()
