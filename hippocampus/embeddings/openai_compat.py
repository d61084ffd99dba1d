"""Any OpenAI-compatible /embeddings endpoint: OpenAI, OpenRouter, Ollama, vLLM, TEI."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai
from tenacity import RetryError, retry, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import EmbeddingError
from ..llm.client import is_transient
from .base import Role, bounded, normalize


class OpenAIEmbedder:
    """Remote embeddings; `query_prefix`/`passage_prefix` serve asymmetric models like e5."""

    def __init__(
        self,
        model: str,
        dim: int,
        base_url: str,
        api_key: str = "",
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        retry_base_delay_s: float = 1.0,
        query_prefix: str = "",
        passage_prefix: str = "",
    ):
        self.model_name = model
        self._dim = dim
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_base_delay_s = retry_base_delay_s
        self.prefix = {"query": query_prefix, "passage": passage_prefix}
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of strings, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefix = self.prefix.get(role, "")
        out = []
        for start in range(0, len(texts), self.batch_size):
            chunk = [prefix + bounded(t) for t in texts[start : start + self.batch_size]]
            out.append(self._batch(chunk))
        matrix = np.concatenate(out)
        if matrix.shape[1] != self.dim:
            raise EmbeddingError(f"{self.model_name} returned {matrix.shape[1]}-d vectors, configured embedding_dim is {self.dim}")
        return normalize(matrix)

    def _batch(self, chunk: list[str]) -> np.ndarray:
        @retry(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.max_retries),
            wait=wait_exponential(multiplier=self.retry_base_delay_s, max=30),
            reraise=True,
        )
        def call() -> np.ndarray:
            resp = self._client.embeddings.create(model=self.model_name, input=chunk)
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise EmbeddingError(f"{self.model_name} returned {len(data)} vectors for {len(chunk)} texts")
            return np.asarray([d.embedding for d in data], dtype=np.float32)

        try:
            return call()
        except EmbeddingError:
            raise
        except (openai.OpenAIError, RetryError, ValueError) as exc:
            raise EmbeddingError(f"embedding with {self.model_name} failed: {exc}") from exc
