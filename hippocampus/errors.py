"""One error hierarchy, so callers can catch exactly what they can handle.

HippocampusError
 +-- ConfigError          bad settings, missing API key for a remote provider, bad URI
 |    +-- AuthError            the service refused the API key (missing, unknown); only a Client raises it
 +-- InvalidInput         bad arguments; raised before anything is written
 +-- NotFound             no such memory for this user (also: another user's memory)
 +-- StoreError           Milvus failures
 |    +-- StoreLockedError     a milvus-lite path already opened by another process
 |    +-- SchemaMismatchError  store created with another embedder/dimension/schema, or not a
 |    |                        store of this format (e.g. a plain file); vectors of the wrong dimension
 |    +-- StoreCorruptedError  a store whose files are damaged or unreadable, or a non-empty
 |    |                        directory that is not a milvus-lite store
 |    +-- ServiceUnavailable   a Client could not reach the service (not running, wrong URL)
 +-- EmbeddingError       the embedder failed after retries
 +-- LLMError             the LLM failed after retries, or never returned valid JSON
"""

from __future__ import annotations


class HippocampusError(Exception):
    """Base class of every error this library raises on purpose."""


class ConfigError(HippocampusError):
    """A setting is wrong or missing (HTTP 400; exit code 2 on the command line)."""


class AuthError(ConfigError):
    """A service answered 401: the client's API key is missing or unknown."""


class InvalidInput(HippocampusError, ValueError):
    """A bad argument, refused before anything is written (HTTP 422; exit code 2)."""


class NotFound(HippocampusError, KeyError):
    """No such memory or event for this user; another user's id is answered the same (HTTP 404)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


class StoreError(HippocampusError):
    """The store failed or cannot be opened (HTTP 503); `uri` names it."""

    def __init__(self, message: str, uri: str | None = None, original_error: Exception | None = None):
        self.uri = uri
        self.original_error = original_error
        super().__init__(message)


class StoreLockedError(StoreError):
    """Another process (often a running service) holds this milvus-lite store: go through the service."""


class SchemaMismatchError(StoreError):
    """The collection was written by another schema or embedder (re-embed it, or choose another)."""


class StoreCorruptedError(StoreError):
    """The store's files cannot be read as a store."""


class ServiceUnavailable(StoreError):
    """A Client could not reach the Hippocampus service; nothing was sent, or no answer came back."""


class EmbeddingError(HippocampusError):
    """The embedder failed (search falls back to BM25 alone where it can)."""


class LLMError(HippocampusError):
    """The configured model failed after its retries (HTTP 502); `model`, `attempts` and `last_error` say how."""

    def __init__(self, model: str, attempts: int, last_error: BaseException | str, message: str | None = None):
        self.model = model
        self.attempts = attempts
        self.last_error = last_error
        super().__init__(message or f"LLM {model!r} failed after {attempts} attempt(s): {last_error}")


# How the service answers each error, and how a Client turns the answer back into the same class.
# Most specific first: the first class an error is an instance of decides its status.
HTTP_STATUS: tuple[tuple[type[HippocampusError], int], ...] = (
    (AuthError, 401),
    (InvalidInput, 422),
    (NotFound, 404),
    (ConfigError, 400),
    (ServiceUnavailable, 503),
    (StoreLockedError, 503),
    (SchemaMismatchError, 503),
    (StoreCorruptedError, 503),
    (StoreError, 503),
    (EmbeddingError, 503),
    (LLMError, 502),
    (HippocampusError, 500),
)
_BY_NAME: dict[str, type[HippocampusError]] = {cls.__name__: cls for cls, _ in HTTP_STATUS}


def http_status(exc: HippocampusError) -> int:
    return next(status for cls, status in HTTP_STATUS if isinstance(exc, cls))


def from_wire(kind: str, message: str, status: int) -> HippocampusError:
    """The exception a service's error body names, so a Client raises what Memory would have raised."""
    cls = _BY_NAME.get(kind) or next((c for c, s in HTTP_STATUS if s == status), HippocampusError)
    if issubclass(cls, StoreError):
        return cls(message)
    if issubclass(cls, LLMError):
        return LLMError("service", 0, message, message=message)  # the server's message, word for word
    return cls(message)
