"""API keys and the tenants they stand for.

Keys come from the environment or a keys file, never from hippocampus.yaml:

- `HIPPOCAMPUS_API_KEY=<key>`: one operator key (every user id).
- `HIPPOCAMPUS_API_KEYS="<key>=alice,bob;<key2>=*"`: keys bound to user ids (`*`: operator).
- a keys file (`serve --keys-file`, or `HIPPOCAMPUS_KEYS_FILE`), YAML or JSON::

      keys:
        - name: support-bot          # shown in logs and metrics instead of the key
          key: "s3cr3t..."           # or sha256: "<hex digest of the key>", so the file holds no secret
          users: [alice, bob]        # or "*" for an operator key
          agents: [planner]          # optional: the key acts only as these agents (docs/agents.md)

A presented key is hashed and compared with every stored digest in constant time; keys are never
logged (a tenant is named by its `name`, or by the first 8 hex digits of its digest).

Every key given in clear must carry at least 128 bits of entropy (`key_bits`, a conservative
estimate) and none of the shapes a guesser tries first (guessable.py: a sequence, a keyboard row, the
hex digest of a common password, a counter, a phrase), or the service refuses to start with a
one-line ConfigError naming the entry:
`hippocampus keys new` makes a good one (`secrets.token_urlsafe(32)`, about 256 bits) and prints its
keys-file line. A key given only as a sha256 digest cannot be checked (the digest of a weak key looks
like any other): whoever writes the digest is trusted to have made the key well.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import string
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import AuthError, ConfigError, InvalidInput, NotFound
from ..store.agents import agent_of
from .guessable import why_guessable

ENV_KEY = "HIPPOCAMPUS_API_KEY"
ENV_KEYS = "HIPPOCAMPUS_API_KEYS"
ENV_KEYS_FILE = "HIPPOCAMPUS_KEYS_FILE"
MIN_KEY_BITS = 128  # a key with less estimated entropy is refused at start-up: it could be guessed
_CLASSES = (set(string.digits), set(string.ascii_lowercase), set(string.ascii_uppercase), set(string.punctuation + " "))
_HEX = (set(string.digits + "abcdef"), set(string.digits + "ABCDEF"))
_ZLIB_FRAME = 8  # bytes zlib adds to any input (header, block marker, checksum)


def key_bits(key: str) -> float:
    """A conservative estimate of a key's entropy in bits: the least of three upper bounds.

    - the alphabet: length x log2(the size of the character classes it uses: digits 10, a-z 26,
      A-Z 26, punctuation and space 33, anything else 256; a key made of hex digits only, 16);
    - the spread: 2 x length x the Shannon entropy of its own characters (a short random sample
      shows less than its source's entropy, a random 32-hex-digit key down to ~2.8 of its 4 bits a
      character, hence the factor; a key of few distinct characters still falls far short);
    - repetition: 8 x the bytes zlib needs for it, less zlib's frame (a repeated pattern compresses).

    "aaaaaaaaaaaaaaaa" has 0, a 32-hex-digit key 128, `secrets.token_urlsafe(32)` over 200."""
    n = len(key)
    if n == 0:
        return 0.0
    chars = set(key)
    if any(chars <= hexdigits for hexdigits in _HEX) and not chars <= set(string.digits):
        pool = 16
    else:
        pool = sum(len(c) for c in _CLASSES if chars & c) + (256 if any(ord(ch) > 126 for ch in chars) else 0)
    alphabet = n * math.log2(pool) if pool > 1 else 0.0
    counts = Counter(key)
    spread = 2 * n * -sum(c / n * math.log2(c / n) for c in counts.values())
    packed = 8 * max(len(zlib.compress(key.encode("utf-8"), 9)) - _ZLIB_FRAME, 0)
    return min(alphabet, spread, packed)


def check_key_strength(key: str, where: str) -> None:
    """ConfigError (one line, naming the entry) for a key that could be guessed."""
    bits = key_bits(key)
    if bits < MIN_KEY_BITS:
        raise ConfigError(f"{where}: this API key is too weak (about {bits:.0f} bits of entropy, at least {MIN_KEY_BITS} "
                          "needed: too short or too few different characters); make one with `hippocampus keys new`")
    reason = why_guessable(key)  # the shapes a guesser tries first, whatever their entropy (guessable.py)
    if reason is not None:
        raise ConfigError(f"{where}: this API key is guessable ({reason}); make one with `hippocampus keys new`")


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass(frozen=True)
class Tenant:
    """Who a request speaks for: a set of user ids, or every user (`users is None`, an operator); with
    `agents`, only as those agents within them (store/agents.py): such a key reads and writes its agents'
    own memories and the users' shared ones, never another agent's, and only through the verbs that
    take an agent (check_agent, check_owned); every other verb refuses it (`check`)."""

    name: str
    users: frozenset[str] | None = None
    agents: frozenset[str] | None = None

    @property
    def is_operator(self) -> bool:
        return self.users is None

    def may(self, user_id: str) -> bool:
        return self.users is None or user_id in self.users

    def check(self, user_id: str | None, missing: str) -> None:
        """A user id this tenant may not touch is answered like a missing memory: `missing` is the
        very message the library gives for one, so the answer tells nothing about other tenants.
        A key bound to agents is refused here too: a whole-user verb (export, reset, consolidate, ...)
        would reach other agents' memories."""
        self._check_user(user_id, missing)
        if self.agents is not None:
            raise NotFound(missing)

    def _check_user(self, user_id: str | None, missing: str) -> None:
        if user_id is not None and isinstance(user_id, str) and not self.may(user_id):
            raise NotFound(missing)

    def check_agent(self, user_id: str | None, agent_id: str | None, missing: str) -> str | None:
        """The user check, then the agent a call acts as: the caller's for an unbound key; for a bound key
        one of its agents (the one it has when the call names none), another agent answered as `missing`."""
        self._check_user(user_id, missing)
        if self.agents is None:
            return agent_id
        if agent_id is None:
            if len(self.agents) != 1:
                raise InvalidInput(f"this key acts as one of several agents; name it with agent_id ({sorted(self.agents)})")
            return next(iter(self.agents))
        if agent_id not in self.agents:
            raise NotFound(missing)
        return agent_id

    def may_touch(self, metadata: Mapping[str, Any] | None) -> bool:
        """Whether this key may read or change a memory with this metadata: a shared one or its agents'."""
        owner = agent_of(metadata)
        return self.agents is None or owner is None or owner in self.agents

    def check_owned(self, user_id: str | None, missing: str, metadata_of: Callable[[], Mapping[str, Any] | None]) -> None:
        """A by-id verb (get, update, delete, history): the user check; for a bound key the memory
        (`metadata_of` reads it) must be shared or its agents', else `missing`, as for an unknown id."""
        self._check_user(user_id, missing)
        if self.agents is None:
            return
        try:
            metadata = metadata_of()
        except NotFound:
            raise NotFound(missing) from None
        if not self.may_touch(metadata):
            raise NotFound(missing)

    def scope(self, user_id: str | None) -> list[str | None]:
        """The user ids a store-wide verb (consolidate, stats) runs over for this tenant."""
        if user_id is not None:
            return [user_id]
        return [None] if self.users is None else sorted(self.users)


OPEN = Tenant(name="anonymous (no keys configured)")


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    tenant: Tenant


class KeyRing:
    """The configured keys. Empty means an open server, which may only listen on loopback."""

    def __init__(self, entries: Iterable[_Entry] = ()):
        self._entries = tuple(entries)
        self._fingerprints: tuple[tuple[_Entry, ...] | None, frozenset[str]] = (None, frozenset())
        self.keys_file: str | Path | None = None  # where `load` read them, for `reload` (SIGHUP)
        self.env: Mapping[str, str] | None = None

    @property
    def tenants(self) -> frozenset[Tenant]:
        return frozenset(e.tenant for e in self._entries)

    def replace(self, other: KeyRing) -> None:
        """Take `other`'s keys in place, in one assignment: every request, face and session check
        holds this very object, and sees either the old keys or the new ones, never a mix."""
        self._entries = other._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def is_open(self) -> bool:
        return not self._entries

    @property
    def fingerprints(self) -> frozenset[str]:
        """The fingerprint of every key in force (`identify`): what a Web UI session is bound to."""
        entries, cached = self._entries, self._fingerprints
        if cached[0] is not entries:  # made once per set of keys (every UI request asks)
            cached = self._fingerprints = (entries, frozenset(e.digest.hex() for e in entries))
        return cached[1]

    def resolve(self, presented: str | None) -> Tenant:
        """The tenant a presented key stands for; AuthError (401) when keys are configured and it is none."""
        return self.identify(presented)[0]

    def identify(self, presented: str | None) -> tuple[Tenant, str]:
        """`resolve`, and the presented key's fingerprint (the hex SHA-256 of the key, never the key; ""
        on a service without keys). Two keys under one name, users and agents are one Tenant, but two
        fingerprints: a session bound to one ends when that key is rotated out (key_reload, issue 57)."""
        if self.is_open:
            return OPEN, ""
        if not presented:
            raise AuthError("this server requires an API key: send 'Authorization: Bearer <key>'")
        probe = digest(presented)
        found: _Entry | None = None
        for entry in self._entries:  # no early exit: every stored digest is compared
            if hmac.compare_digest(probe, entry.digest):
                found = entry
        if found is None:
            raise AuthError("the API key is not valid for this server")
        return found.tenant, found.digest.hex()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, keys_file: str | Path | None = None, env: Mapping[str, str] | None = None) -> KeyRing:
        """Keys from the environment and the keys file (argument, else HIPPOCAMPUS_KEYS_FILE)."""
        env = os.environ if env is None else env
        entries: list[_Entry] = []
        if env.get(ENV_KEY):
            entries.append(_entry(env[ENV_KEY], "*", f"{ENV_KEY}"))
        for n, part in enumerate(p for p in env.get(ENV_KEYS, "").split(";") if p.strip()):
            key, sep, users = part.strip().partition("=")
            if not sep:
                raise ConfigError(f"{ENV_KEYS}: entry {n + 1} is not key=user,user (or key=*)")
            entries.append(_entry(key.strip(), users, f"{ENV_KEYS}[{n + 1}]"))
        path = keys_file or env.get(ENV_KEYS_FILE)
        if path:
            entries += _read_keys_file(Path(path))
        digests = [e.digest for e in entries]
        if len(set(digests)) != len(digests):
            raise ConfigError("the same API key is configured twice")
        ring = cls(entries)
        ring.keys_file, ring.env = keys_file, env
        return ring


def _users(value: Any, where: str) -> frozenset[str] | None:
    if value == "*" or value == ["*"]:
        return None
    if isinstance(value, str):
        value = [u.strip() for u in value.split(",")]
    if not isinstance(value, list) or not value or not all(isinstance(u, str) and u.strip() for u in value):
        raise ConfigError(f"{where}: users must be '*' or a non-empty list of user ids")
    return frozenset(u.strip() for u in value)


def _agents(value: Any, where: str) -> frozenset[str] | None:
    """A keys-file entry's `agents`: absent (any agent) or a non-empty list of agent ids."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [a.strip() for a in value.split(",")]
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a.strip() for a in value):
        raise ConfigError(f"{where}: agents must be a non-empty list of agent ids")
    return frozenset(a.strip() for a in value)


def _entry(key: str, users: Any, where: str, name: str | None = None, agents: Any = None) -> _Entry:
    if not isinstance(key, str) or not key.strip():
        raise ConfigError(f"{where}: an API key must be a non-empty string (or give its sha256)")
    check_key_strength(key.strip(), where)
    d = digest(key.strip())
    return _Entry(d, Tenant(name=name or f"key:{d.hex()[:8]}", users=_users(users, where), agents=_agents(agents, where)))


def _warn_if_readable(path: Path, entries: list[_Entry], rows: list[Any]) -> None:
    """A keys file with keys in clear that other users of the machine can read: one warning (the
    service still starts; `chmod 600` it, or keep only sha256 digests there)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return
    if mode & 0o077 and any(isinstance(r, dict) and "key" in r for r in rows):
        logging.getLogger("hippocampus.server").warning(
            "keys file %s holds keys in clear and is readable by other users (mode %03o): chmod 600 it, or keep "
            "only sha256 digests in it", path, mode)


def _read_keys_file(path: Path) -> list[_Entry]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"keys file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"keys file {path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    rows = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ConfigError(f"keys file {path}: expected a mapping with a 'keys' list")
    entries = []
    for n, row in enumerate(rows):
        where = f"keys file {path}, entry {n + 1}"
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: expected a mapping with key (or sha256) and users")
        name = row.get("name")
        if "sha256" in row:
            try:
                d = bytes.fromhex(str(row["sha256"]))
            except ValueError:
                d = b""
            if len(d) != 32:
                raise ConfigError(f"{where}: sha256 must be 64 hex digits")
            entries.append(_Entry(d, Tenant(name=str(name or f"key:{d.hex()[:8]}"), users=_users(row.get("users"), where),
                                            agents=_agents(row.get("agents"), where))))
        else:
            entries.append(_entry(row.get("key"), row.get("users"), where, str(name) if name else None, row.get("agents")))
    _warn_if_readable(path, entries, rows)
    return entries
