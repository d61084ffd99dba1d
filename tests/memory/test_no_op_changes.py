"""Issue 31, case 15's last items: an update or curate that changes nothing leaves no event (before: an
"updated" event with equal old and new text), the history table says what a text-less change changed,
and an OpenAI-compatible provider with no llm_model is named by its endpoint in errors (before: "LLM
'offline-rules' failed")."""

from __future__ import annotations

import pytest
from rich.console import Console

from hippocampus import Memory
from hippocampus.cli.render import history_table
from hippocampus.errors import LLMError
from hippocampus.llm.client import LLMClient
from hippocampus.models import HistoryAction

U = "alice"


def _render(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_an_update_with_the_same_text_and_metadata_writes_no_event(memory: Memory):
    (mid,) = memory.add("I like green tea", user_id=U, metadata={"source": "chat"}).ids
    before = memory.history(mid, U)
    same = memory.update(mid, "I like green tea", user_id=U, metadata={"source": "chat"})
    assert same.text == "I like green tea" and memory.history(mid, U) == before
    memory.update(mid, "I like green tea", user_id=U, metadata={"source": "email"})  # a real change is recorded
    assert [e.action for e in memory.history(mid, U)][-1] is HistoryAction.UPDATED


def test_a_curate_to_the_same_category_writes_no_event_and_a_real_one_shows_what_changed(memory: Memory):
    (mid,) = memory.add("I like green tea", user_id=U).ids
    category = memory.get(mid, U).life.category
    before = memory.history(mid, U)
    memory.curate(mid, U, category=category)
    assert memory.history(mid, U) == before
    other = "fact" if category.value != "fact" else "preference"
    memory.curate(mid, U, category=other)
    text = _render(history_table(memory.history(mid, U), mid))
    assert f"category: {category.value} -> {other}" in text and "same text; category" in text


def test_an_endpoint_without_a_model_name_is_named_by_its_endpoint():
    model = LLMClient(model="offline-rules", base_url="http://127.0.0.1:9/v1", max_retries=1, retry_base_delay_s=0.0,
                      timeout_s=2.0)
    with pytest.raises(LLMError) as err:  # nothing listens on port 9
        model.chat("system", "user")
    assert "offline-rules" not in str(err.value) and "(llm_model not set) at http://127.0.0.1:9/v1" in str(err.value)
    named = LLMClient(model="qwen2.5", base_url="http://127.0.0.1:9/v1", max_retries=1, retry_base_delay_s=0.0)
    with pytest.raises(LLMError) as err:
        named.chat("system", "user")
    assert err.value.model == "qwen2.5"
