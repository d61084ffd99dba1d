"""The Host names the service answers to (guard.py refuses any other with 421): a DNS name rebound
to 127.0.0.1 makes a web page same-origin with the service, and only the Host header tells."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from ..errors import ConfigError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_NAME = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)$")


def split_host(value: str) -> tuple[str, int | None]:
    """("name", port or None) from a Host header or an operator's name; ValueError when it is neither."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else ("", "")
    else:
        name, sep, port = value.partition(":")
        rest = sep + port
    if not name or not _NAME.match(name) or (rest and not (rest[:1] == ":" and rest[1:].isdigit() and len(rest) <= 6)):
        raise ValueError(f"not a host name: {value!r}")
    return name, int(rest[1:]) if rest else None


def is_loopback_host(host: str) -> bool:
    """localhost or a loopback address (127.0.0.0/8, ::1), with or without brackets."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class HostList:
    """The Host names the service answers to: loopback names (any port) and the operator's, each
    either a bare name (any port) or name:port."""

    def __init__(self, names: Iterable[str] = ()):
        self.names: list[tuple[str, int | None]] = []
        for name in names:
            try:
                self.names.append(split_host(name))
            except ValueError:
                raise ConfigError(f"--allowed-host {name!r}: give a host name or address, optionally with :port "
                                  "(no scheme, path or wildcard)") from None

    def allows(self, host: str | None) -> bool:
        if not host:
            return False
        try:
            name, port = split_host(host)
        except ValueError:
            return False
        return is_loopback_host(name) or (name, None) in self.names or (name, port) in self.names

    def mcp_hosts(self) -> list[str]:
        """The same list in the MCP SDK's TransportSecuritySettings form ("name", "name:*")."""
        out = [f"{n}{suffix}" for n in LOOPBACK_NAMES for suffix in ("", ":*")]
        for name, port in self.names:
            out += [f"{name}:{port}"] if port else [name, f"{name}:*"]
        return out

    def mcp_origins(self) -> list[str]:
        return [f"{scheme}://{host}" for host in self.mcp_hosts() for scheme in ("http", "https")]
