"""Where MemoryConfig's file layer comes from (config.py's `settings_customise_sources`): a file Hippocampus owns.

`HIPPOCAMPUS_CONFIG` names one; else `./hippocampus.yaml`. A `./config.yaml` is a name other programs use for their
own settings (mem0's, a web framework's), so it is read only when it says it is Hippocampus's: a top-level
`hippocampus:` section (any file may hold one, beside another program's keys), or, for a file written before
hippocampus.yaml, keys that are all Hippocampus settings (read with a log line asking to rename it). Any other
./config.yaml is left alone, with a log line: it never breaks start-up. Secrets are refused in any file."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from .errors import ConfigError

OWN_FILE = "hippocampus.yaml"
SHARED_FILE = "config.yaml"
SECTION = "hippocampus"
SECRET_FIELDS = ("llm_api_key", "embedding_api_key")
log = logging.getLogger("hippocampus.config")
_said: set[tuple[str, str]] = set()  # each log line once per process, not once per Memory


def config_path() -> Path | None:
    """The settings file to read: HIPPOCAMPUS_CONFIG, else ./hippocampus.yaml, else ./config.yaml (checked by
    `own_settings`), else none."""
    explicit = os.environ.get("HIPPOCAMPUS_CONFIG")
    if explicit:
        return Path(explicit)
    for name in (OWN_FILE, SHARED_FILE):
        if Path(name).exists():
            return Path(name)
    return None


class YamlSource(PydanticBaseSettingsSource):
    """The settings of `config_path()`'s file, as `own_settings` reads them."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None):
        super().__init__(settings_cls)
        self.path = path

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        data = own_settings(self.path, set(self.settings_cls.model_fields))
        for key in SECRET_FIELDS:
            if data.get(key):
                raise ConfigError(f"{self.path}: {key} must not be stored in a file; set HIPPOCAMPUS_{key.upper()}")
        return {k: v for k, v in data.items() if v is not None}


def own_settings(path: Path, fields: set[str]) -> dict[str, Any]:
    """Hippocampus's settings in `path`: its `hippocampus:` section when it has one, else the whole file when
    Hippocampus owns it (named by HIPPOCAMPUS_CONFIG, or hippocampus.yaml); a ./config.yaml without the section
    only when every key is a setting. Raises ConfigError for a file of ours that is not a mapping of settings."""
    shared = path == Path(SHARED_FILE) and not os.environ.get("HIPPOCAMPUS_CONFIG")
    try:
        data = yaml_settings(path)
    except ConfigError as exc:
        if not shared:
            raise
        return _skip(path, f"it cannot be read as YAML ({exc})")
    if isinstance(data, dict) and SECTION in data:
        data = data[SECTION] if data[SECTION] is not None else {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the `{SECTION}:` section must be a mapping of settings")
        return data
    if not shared:
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        return data
    if not isinstance(data, dict) or not data or not set(map(str, data)) <= fields:
        other = sorted(map(str, data))[:5] if isinstance(data, dict) else []
        return _skip(path, f"its keys {[k for k in other if k not in fields]} are not Hippocampus settings" if other
                     else "it is not a mapping of Hippocampus settings")
    _say(path, "legacy", "reading %s as Hippocampus's settings: rename it %s (or put them under a `%s:` section); a "
         "./config.yaml is read only while every key is a Hippocampus setting", path, OWN_FILE, SECTION)
    return data


def _skip(path: Path, why: str) -> dict[str, Any]:
    _say(path, why, "%s is not read as Hippocampus's settings: %s (Hippocampus reads ./%s, or a `%s:` section of "
         "./config.yaml)", path, why, OWN_FILE, SECTION)
    return {}


def _say(path: Path, what: str, message: str, *args: Any) -> None:
    if (str(path.resolve()), what) not in _said:
        _said.add((str(path.resolve()), what))
        log.warning(message, *args)


def yaml_settings(path: Path) -> Any:
    """The parsed config file; a file that cannot be read or parsed is a ConfigError naming it and why."""
    if path.is_dir():
        raise ConfigError(f"config file {path} is a directory, not a YAML file (check HIPPOCAMPUS_CONFIG)")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist (HIPPOCAMPUS_CONFIG names it)")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
