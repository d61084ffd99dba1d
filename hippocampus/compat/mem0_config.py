"""mem0's configuration dict (`Memory.from_config`) as Hippocampus settings (docs/mem0.md, "Configuration").

What has a counterpart is mapped: a Milvus vector store (its url, token and collection), an OpenAI-compatible LLM or
embedder (openai, azure_openai aside; ollama, lmstudio, vllm, deepseek, together, xai: their base URL, model, key),
`custom_instructions` and `custom_categories`. Knobs that only tune a provider Hippocampus drives its own way
(temperature, top_p, history_db_path: history lives in the store) are named in a warning. What has none (another
vector store, a graph store, a reranker, mem0's own prompts, an unknown key) is refused by name with what to do
instead: a mem0 program never runs on a store or a model it did not ask for without being told."""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..errors import InvalidInput

# provider -> (the config key of its base URL, its default base URL (None: the provider's own), appended path)
_OPENAI_LIKE: dict[str, tuple[str, str | None, str]] = {
    "openai": ("openai_base_url", None, ""),  # None: OPENAI_BASE_URL or OPENAI_API_BASE, else OPENAI_URL
    "ollama": ("ollama_base_url", "http://localhost:11434", "/v1"),  # mem0 names Ollama's root; its OpenAI API is /v1
    "lmstudio": ("lmstudio_base_url", "http://localhost:1234/v1", ""),
    "vllm": ("vllm_base_url", "http://localhost:8000/v1", ""),
    "deepseek": ("deepseek_base_url", "https://api.deepseek.com", ""),
    "together": ("together_base_url", "https://api.together.xyz/v1", ""),
    "xai": ("xai_base_url", "https://api.x.ai/v1", ""),
}
OPENAI_URL = "https://api.openai.com/v1"
# mem0's default models where its config names none
_LLM_MODELS = {"openai": "gpt-4.1-nano-2025-04-14", "ollama": "llama3.1:70b", "deepseek": "deepseek-chat"}
_EMBED_MODELS = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}
_TUNING = ("temperature", "top_p", "top_k", "enable_vision", "vision_details", "http_client_proxies")
_NOT_APPLIED = ("history_db_path",)
_REFUSED = {
    "graph_store": "Hippocampus builds its own graph in the store (config `graph`, docs/graph-memory.md)",
    "reranker": "Hippocampus ranks with its own stages (docs/performance.md); no external reranker is called",
    "custom_fact_extraction_prompt": "Hippocampus's prompts are files with their own result schema; give the rules "
                                     "as custom_instructions (the project's instructions, docs/categories.md)",
    "custom_update_memory_prompt": "Hippocampus decides updates with its own prompt; give the rules as "
                                   "custom_instructions (docs/categories.md)",
}
KNOWN = ("vector_store", "llm", "embedder", "history_db_path", "version", "custom_instructions", "custom_categories",
         *_REFUSED)


def native_config(config: dict[str, Any]) -> dict[str, Any]:
    """mem0's config dict as MemoryConfig keywords; raises InvalidInput naming the first key with no counterpart."""
    unknown = [k for k in config if k not in KNOWN]
    if unknown:
        raise InvalidInput(f"unknown mem0 config keys {unknown}; mem0's are {', '.join(KNOWN)}")
    for key, why in _REFUSED.items():
        if config.get(key):
            raise InvalidInput(f"mem0 config {key!r} has no counterpart here: {why}")
    if config.get("version") not in (None, "v1.1"):
        raise InvalidInput(f"mem0 config version {config['version']!r}: only v1.1's result shape ({{'results': [...]}}) "
                           "is served")
    ignored = [k for k in _NOT_APPLIED if config.get(k)]
    out: dict[str, Any] = {}
    if config.get("vector_store"):
        out.update(_vector_store(config["vector_store"]))
    if config.get("llm"):
        out.update(_provider("llm", config["llm"], ignored))
    if config.get("embedder"):
        out.update(_provider("embedder", config["embedder"], ignored))
    if ignored:
        warnings.warn(f"hippocampus.compat.mem0: {ignored} do not apply (history lives in the store; the processors "
                      "set their own sampling)", stacklevel=4)
    if config.get("custom_instructions"):
        out["instructions"] = config["custom_instructions"]
    if config.get("custom_categories"):
        cats = config["custom_categories"]
        if not isinstance(cats, list) or not all(isinstance(c, dict) and len(c) == 1 for c in cats):
            raise InvalidInput("custom_categories is a list of {name: description} dicts")
        out["categories"] = [{"name": k, "description": v} for c in cats for k, v in c.items()]
    return out


def _section(name: str, value: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, dict) or not isinstance(value.get("provider", ""), str) or set(value) - {"provider", "config"}:
        raise InvalidInput(f"mem0 config {name!r} is {{'provider': ..., 'config': {{...}}}}")
    inner = value.get("config") or {}
    if not isinstance(inner, dict):
        raise InvalidInput(f"mem0 config {name}.config is a dict")
    return value.get("provider") or "", inner


def _vector_store(value: Any) -> dict[str, Any]:
    provider, inner = _section("vector_store", value)
    if provider != "milvus":
        raise InvalidInput(f"mem0 vector_store provider {provider or '(none)'!r} has no counterpart here: Hippocampus "
                           "keeps memories in Milvus (milvus-lite by default); use provider 'milvus' or leave "
                           "vector_store out")
    extra = sorted(set(inner) - {"url", "token", "collection_name", "embedding_model_dims", "metric_type", "db_name"})
    if extra or inner.get("metric_type") not in (None, "COSINE") or inner.get("db_name") not in (None, "", "default"):
        raise InvalidInput(f"mem0 vector_store milvus: only url, token, collection_name and embedding_model_dims map "
                           f"here (cosine, the default database); got {extra or inner}"[:300])
    out = {k2: inner[k1] for k1, k2 in (("url", "milvus_uri"), ("token", "milvus_token"),
                                        ("collection_name", "collection_name"), ("embedding_model_dims", "embedding_dim"))
           if inner.get(k1)}
    return out


def _provider(name: str, value: Any, ignored: list[str]) -> dict[str, Any]:
    provider, inner = _section(name, value)
    if provider not in _OPENAI_LIKE:
        raise InvalidInput(f"mem0 {name} provider {provider or '(none)'!r} has no counterpart here: Hippocampus speaks "
                           f"the OpenAI API ({', '.join(_OPENAI_LIKE)}); or leave {name} out for the offline default")
    url_key, default_url, suffix = _OPENAI_LIKE[provider]
    prefix = "llm" if name == "llm" else "embedding"
    maps = {"model": f"{prefix}_model", "api_key": f"{prefix}_api_key"}
    maps.update({"max_tokens": "llm_max_tokens"} if name == "llm" else {"embedding_dims": "embedding_dim"})
    unknown = sorted(set(inner) - set(maps) - {url_key} - set(_TUNING))
    if unknown:
        raise InvalidInput(f"mem0 {name}.config {unknown} have no counterpart here; {sorted(maps)} and {url_key} map")
    ignored += [f"{name}.{k}" for k in _TUNING if k in inner]
    models = _LLM_MODELS if name == "llm" else _EMBED_MODELS
    out: dict[str, Any] = {f"{prefix}_provider": "openai"}
    out.update({maps[k]: v for k, v in inner.items() if k in maps and v is not None})
    out.setdefault(f"{prefix}_model", models.get(provider))
    if provider == "openai":  # mem0's OpenAI client: the environment's base URL, else OpenAI's own API
        default_url = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or OPENAI_URL
    url = inner.get(url_key) or default_url
    if url:
        out[f"{prefix}_base_url"] = url.rstrip("/") + (suffix if not url.rstrip("/").endswith(suffix) else "")
    return {k: v for k, v in out.items() if v is not None}
