"""Liveness as an answer, not a pid (issue 57): the service you reach is the one you meant.

`hippocampus serve` records itself (cli/registry.py) with a random secret, in a file only its user reads.
A caller holding the record sends /healthz a fresh challenge; the service answers with an HMAC of the
challenge and its own pid under that secret. Only the process that wrote the record can answer so: a pid
reused by another program, another service now listening on the recorded port, or a service that
accepts and never answers all fail the check, and their record is stale (removed, never signalled).
The secret itself never crosses the wire. Here, in the contract, because the service answers what the
command line checks.
"""

from __future__ import annotations

import hashlib
import hmac

CHALLENGE_HEADER = "X-Hippocampus-Challenge"
PROOF_HEADER = "X-Hippocampus-Proof"
MAX_CHALLENGE = 128  # characters; a longer challenge is not answered


def proof(secret: str, challenge: str, pid: int) -> str:
    """What the service with `secret` and `pid` answers to `challenge` (hex HMAC-SHA256)."""
    return hmac.new(secret.encode("utf-8"), f"{pid}:{challenge}".encode(), hashlib.sha256).hexdigest()


def answers(secret: str | None, challenge: str | None, pid: int) -> str | None:
    """The proof header's value for a request carrying `challenge`; None when there is nothing to prove
    (no secret: a service started without a record; no challenge, or one too long)."""
    if not secret or not challenge or len(challenge) > MAX_CHALLENGE:
        return None
    return proof(secret, challenge, pid)
