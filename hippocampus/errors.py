"""One error hierarchy, so callers can catch exactly what they can handle.

HippocampusError
 +-- ConfigError          bad settings, missing API key for a remote provider, bad URI
 +-- InvalidInput         bad arguments; raised before anything is written
 +-- NotFound             no such memory for this user (also: another user's memory)
 +-- StoreError           Milvus failures
 |    +-- StoreLockedError     a milvus-lite path already opened by another process
 |    +-- SchemaMismatchError  store created with another embedder/dimension/schema, or not a
 |    |                        store of this format (e.g. a plain file); vectors of the wrong dimension
 |    +-- StoreCorruptedError  a store whose files are damaged or unreadable, or a non-empty
 |                             directory that is not a milvus-lite store
 +-- EmbeddingError       the embedder failed after retries
 +-- LLMError             the LLM failed after retries, or never returned valid JSON
"""

from __future__ import annotations


class HippocampusError(Exception):
    """Base class of every error this library raises on purpose."""


class ConfigError(HippocampusError):
    pass


class InvalidInput(HippocampusError, ValueError):
    pass


class NotFound(HippocampusError, KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class StoreError(HippocampusError):
    def __init__(self, message: str, uri: str | None = None, original_error: Exception | None = None):
        self.uri = uri
        self.original_error = original_error
        super().__init__(message)


class StoreLockedError(StoreError):
    pass


class SchemaMismatchError(StoreError):
    pass


class StoreCorruptedError(StoreError):
    pass


class EmbeddingError(HippocampusError):
    pass


class LLMError(HippocampusError):
    def __init__(self, model: str, attempts: int, last_error: BaseException | str):
        self.model = model
        self.attempts = attempts
        self.last_error = last_error
        super().__init__(f"LLM {model!r} failed after {attempts} attempt(s): {last_error}")
