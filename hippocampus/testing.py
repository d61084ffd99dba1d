"""Test doubles for code built on Hippocampus: a scripted chat model and a deterministic embedder.

They are the doubles the project's own tests use, shipped so that your tests can run a real
`Memory` (real milvus-lite in a temporary folder) with no model download and no endpoint, as
pydantic-ai ships `TestModel` and httpx `MockTransport`::

    from hippocampus import Memory
    from hippocampus.testing import DeterministicEmbedder, ScriptedChatModel

    def test_a_turn_is_kept(tmp_path):
        llm = ScriptedChatModel(replies={"WriteDecision": {"write_episodic": True, "thing": "likes tea"}})
        with Memory(milvus_uri=str(tmp_path / "m.db"), embedder=DeterministicEmbedder(), llm=llm) as memory:
            memory.add("I like tea", user_id="u", infer=True)  # the write decision is asked of `llm`
            assert [h.text for h in memory.search("tea", user_id="u").episodic] == ["likes tea"]
        assert llm.count("WriteDecision") == 1 and "I like tea" in llm.prompts[0].user

`ScriptedChatModel` answers from a script of raw reply strings and parses them exactly as the
real `LLMClient` does (`extract_json`, then the result model's validation, with retries of
unusable replies), so a test exercises the same parsing a deployment does. `DeterministicEmbedder`
hashes text into unit vectors: the same text gives the same vector in every process and run.

To script one step of a longer test, swap the model for a block instead of opening another Memory:
`with memory.override(llm=ScriptedChatModel(...)):` (as pydantic-ai's `Agent.override`); the model
that was there comes back when the block ends, also when it raises.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from .embeddings.base import Role, normalize
from .errors import LLMError
from .llm.base import Prompt
from .llm.json_parse import extract_json

__all__ = ["ScriptedChatModel", "DeterministicEmbedder", "Reply"]

T = TypeVar("T", bound=BaseModel)
# A reply is the raw text a model would send, a dict or model (sent as its JSON), an exception (a
# failed call), or a responder: a function of the prompt's structured inputs returning one of those.
Reply = str | dict | BaseModel | BaseException | Callable[[dict[str, Any]], Any]


class ScriptedChatModel:
    """A ChatModel (the interface of `hippocampus.llm.LLMClient`) whose answers are scripted.

    Each try of a `chat_json` call takes, in this order: the next reply of `script` (answered in
    order, each used once), else `replies[schema name]` (e.g. "WriteDecision": answers every call
    for that result model), else `default`. With none of them left, the script is exhausted: an
    LLMError, so a test that asks more than it scripted fails loudly.

    A call makes up to `attempts` tries, as LLMClient retries unusable replies: a reply that is not
    JSON of the schema, or an exception other than LLMError (a transport failure), costs one try;
    when every try failed, LLMError(model, attempts, last error) is raised. An LLMError reply is
    raised at once. A responder is called with the prompt's `inputs` (what the offline rules
    provider reads); an exception it *raises* is a bug in the test and propagates unchanged.

    Recorded for assertions: `calls` (chat_json calls, what a processor counts as one LLM call),
    `tries` (replies consumed, retries included), `prompts` (every Prompt, in order), `schemas`
    (the result model's name per call) and `count(name)`.
    """

    def __init__(self, script: Iterable[Reply] = (), *, replies: Mapping[str, Reply] | None = None,
                 default: Reply | None = None, attempts: int = 3, model: str = "scripted"):
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.script: deque[Reply] = deque(script)
        self.replies: dict[str, Reply] = dict(replies or {})
        self.default = default
        self.attempts = attempts
        self.model = model
        self.calls = 0
        self.tries = 0
        self.prompts: list[Prompt] = []
        self.schemas: list[str] = []

    def queue(self, *replies: Reply) -> ScriptedChatModel:
        """Append replies to the script (answered after those already queued)."""
        self.script.extend(replies)
        return self

    def count(self, schema_name: str) -> int:
        """How many chat_json calls asked for the result model named `schema_name`."""
        return self.schemas.count(schema_name)

    def chat(self, system: str, user: str) -> str:
        """Free text: the next reply of the script (or `default`), returned as it is, not parsed."""
        self.calls += 1
        prompt = Prompt(name="chat", system=system, user=user, inputs={"system": system, "user": user})
        self.prompts.append(prompt)
        self.schemas.append("str")
        reply = self._answer(self._next("str"), prompt)
        self.tries += 1
        if isinstance(reply, BaseException):
            raise reply if isinstance(reply, LLMError) else LLMError(self.model, 1, reply)
        return reply

    def chat_json(self, prompt: Prompt, schema: type[T]) -> T:
        """The scripted reply parsed and validated as LLMClient does, with its retries."""
        self.calls += 1
        self.prompts.append(prompt)
        self.schemas.append(schema.__name__)
        last: BaseException | str = "no attempt made"
        for _ in range(self.attempts):
            reply = self._answer(self._next(schema.__name__), prompt)
            self.tries += 1
            if isinstance(reply, LLMError):
                raise reply
            if isinstance(reply, BaseException):  # a scripted transport failure: worth another try
                last = reply
                continue
            try:
                return schema.model_validate(extract_json(reply))
            except (ValueError, ValidationError) as exc:  # what LLMClient treats as an unusable reply
                last = exc
        raise LLMError(self.model, self.attempts, last)

    def _next(self, schema_name: str) -> Reply:
        if self.script:
            return self.script.popleft()
        if schema_name in self.replies:
            return self.replies[schema_name]
        if self.default is not None:
            return self.default
        return LLMError(self.model, self.tries, "the script is exhausted")

    @staticmethod
    def _answer(reply: Reply, prompt: Prompt) -> str | BaseException:
        if callable(reply) and not isinstance(reply, (BaseException, BaseModel, type)):
            reply = reply(prompt.inputs)
        if isinstance(reply, BaseModel):
            return reply.model_dump_json()
        if isinstance(reply, (dict, list)):
            return json.dumps(reply, ensure_ascii=False)
        if isinstance(reply, (str, BaseException)):
            return reply
        raise TypeError(f"a scripted reply must be text, a dict, a model or an exception, not {type(reply).__name__}")


_WORD = re.compile(r"[\u4e00-\u9fff]|[^\W_]+", re.UNICODE)


class DeterministicEmbedder:
    """An Embedder (the protocol of `hippocampus.embeddings`) that hashes text into unit vectors.

    The same text gives the same vector in every process and run (blake2b / sha256, no seed
    from the interpreter), instantly and without a model. Two kinds of vector space:

    - `lexical=True` (the default): feature hashing of words and CJK characters, so texts that
      share words are similar and texts that share none are (nearly) orthogonal: a plain
      lexical model, enough for search tests;
    - `lexical=False`: each distinct text its own pseudo-random direction, so no two texts are
      similar by accident: for tests that choose similarities themselves.

    `model_name` is what a store records: reopening a store needs the same name and `dim`.
    `calls` counts `encode` calls.
    """

    def __init__(self, dim: int = 384, *, lexical: bool = True, model_name: str | None = None):
        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}")
        self._dim = dim
        self.lexical = lexical
        self.model_name = model_name or (f"test/hashed-words-{dim}" if lexical else f"test/hashed-text-{dim}")
        self.calls = 0

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        """Unit rows, one per text; `role` is ignored (a symmetric model)."""
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._words(text) if self.lexical else self._whole(text)
        return normalize(out) if self.lexical else out  # a whole-text row is unit already

    def _words(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dim, dtype=np.float32)
        for tok in _WORD.findall(text.lower()) or [text]:
            h = hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest()
            vec[int.from_bytes(h[:4], "little") % self._dim] += 1.0 if h[4] & 1 else -1.0
        return vec

    def _whole(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self._dim)
        return (v / np.linalg.norm(v)).astype(np.float32)
