"""Which store a service holds, comparable without naming it (issue 57): `connect(url, milvus_uri=...)`
used whatever answered /healthz, and wrote into that service's store though the caller named another.

A caller sends /healthz a fresh random nonce in STORE_HEADER; the service answers in the same header with
`fingerprint(its store's URI, nonce)`: an HMAC-SHA256 keyed by the nonce over the store's canonical URI
(a local path resolved to its absolute real path; a server URI with its scheme and host in lower case).
The caller computes the same over the URI it means and compares. The path itself never crosses the wire,
and a fresh nonce each time keeps an answer from being looked up in a table made in advance (one who can
guess the path can still check the guess: the answer confirms a store, it does not hide one). Here, in
the contract, because the service answers what the client checks.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

STORE_HEADER = "X-Hippocampus-Store"
MAX_NONCE = 128  # characters; a longer nonce is not answered


def canonical(uri: str) -> str:
    """One spelling per store: a milvus-lite path absolute, its links resolved; a server URI's scheme and
    host in lower case, without a trailing slash."""
    if "://" not in uri:
        return "lite:" + str(Path(uri).expanduser().resolve())
    parts = urlsplit(uri.strip())
    return "server:" + urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def fingerprint(uri: str, nonce: str) -> str:
    """What a service holding `uri` answers to `nonce` (hex HMAC-SHA256)."""
    return hmac.new(nonce.encode("utf-8"), canonical(uri).encode("utf-8"), hashlib.sha256).hexdigest()


def answers(uri: str | None, nonce: str | None) -> str | None:
    """The header's value for a request carrying `nonce`; None when there is nothing to answer."""
    if not uri or not nonce or len(nonce) > MAX_NONCE:
        return None
    return fingerprint(uri, nonce)
