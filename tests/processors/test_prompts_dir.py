"""A user's own prompt files (`prompts_dir`) are used end to end: over HTTP to the local stub
server, the write decision sends the user's system text, while processors without a file of
their own there keep the packaged prompt; a broken file is a clear ConfigError."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from hippocampus import ConfigError, Memory
from hippocampus.processors.base import packaged_prompts
from tests.openai_stub import OpenAIStub

MARK = "You are ACME's memory clerk."


def _chat(body: dict) -> str:
    system = body["messages"][0]["content"]
    if MARK in system:
        return json.dumps({"write_episodic": True, "context": "", "thing": "custom prompt used", "time": "", "who": "", "reason": "x"})
    return json.dumps({"write_episodic": False, "reason": "packaged prompt"})


def _own_prompts(directory):
    packaged = yaml.safe_load((packaged_prompts() / "write_decider.yaml").read_text(encoding="utf-8"))
    packaged["system"] = f"{MARK}\n{packaged['system']}"
    (directory / "write_decider.yaml").write_text(yaml.safe_dump(packaged, allow_unicode=True), encoding="utf-8")
    return directory


def test_the_write_decision_uses_the_users_prompt_file_over_http(tmp_path, shared_db, embedder):
    (tmp_path / "p").mkdir()
    prompts = _own_prompts(tmp_path / "p")
    with OpenAIStub(chat=_chat) as stub, Memory(milvus_uri=str(shared_db), collection_name=f"pd_{uuid.uuid4().hex[:10]}",
                                                embedder=embedder, llm_provider="openai", llm_base_url=stub.base_url,
                                                llm_model="stub", llm_gate="off", prompts_dir=prompts,
                                                llm_retry_base_delay_s=0) as memory:
        result = memory.add("I started a new job at the harbour office", user_id="u", infer=True)
        assert result.stored and memory.get(result.ids[0], "u").text == "custom prompt used"
        chats = [body for path, body in stub.requests if path.endswith("/chat/completions")]
        assert chats and MARK in chats[-1]["messages"][0]["content"]
    with OpenAIStub(chat=_chat) as stub, Memory(milvus_uri=str(shared_db), collection_name=f"pd_{uuid.uuid4().hex[:10]}",
                                                embedder=embedder, llm_provider="openai", llm_base_url=stub.base_url,
                                                llm_model="stub", llm_gate="off", llm_retry_base_delay_s=0) as packaged:
        assert not packaged.add("I started a new job at the harbour office", user_id="u", infer=True).stored


def test_a_prompt_file_with_a_bad_template_is_a_config_error(tmp_path, shared_db, embedder):
    prompts = tmp_path / "p"
    prompts.mkdir()
    packaged = yaml.safe_load((packaged_prompts() / "write_decider.yaml").read_text(encoding="utf-8"))
    packaged["user"] = "Turns: $no_such_input"
    (prompts / "write_decider.yaml").write_text(yaml.safe_dump(packaged, allow_unicode=True), encoding="utf-8")
    with OpenAIStub(chat=_chat) as stub, Memory(milvus_uri=str(shared_db), collection_name=f"pd_{uuid.uuid4().hex[:10]}",
                                                embedder=embedder, llm_provider="openai", llm_base_url=stub.base_url,
                                                llm_model="stub", llm_gate="off", prompts_dir=prompts) as memory:
        with pytest.raises(ConfigError, match="write_decider"):
            memory.add("I started a new job at the harbour office", user_id="u", infer=True)
