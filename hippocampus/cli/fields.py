"""A command's options read from its verb's request model (contract/requests.py): every field the command does not
spell by hand (its text argument, `--semantic`, `--meta key=value`, ...) becomes an option named by the house
convention (contract/verbs.py CLI_NAMES, else `--field-name`), typed and described by the model, and reaches the
verb under the field's own name. So a field added to the model is an option of `add` with no line here.

typer reads a command's parameters from its signature: `model_options` gives the command (written with a last
parameter `fields: dict[str, Any]`) the signature with those options, and hands them to it as `fields`.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer
from pydantic import BaseModel

from ..contract.verbs import CLI_NAMES, Face

F = TypeVar("F", bound=Callable[..., Any])
_PLAIN = (str, int, float, bool)


def option_name(field: str) -> str:
    """The option that sets `field`: the house name (CLI_NAMES) or the field's, dashed."""
    return CLI_NAMES.get(field, "--" + field.replace("_", "-"))


def _option_type(annotation: Any) -> Any:
    """A type typer parses: the field's own when it is a plain one (optional or not), else text."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] if isinstance(annotation, types.UnionType) else [annotation]
    plain = [a for a in args if a in _PLAIN]
    return (plain[0] if len(args) == 1 and plain else str) | None


def model_options(model: type[BaseModel], face: Face, handled: Iterable[str]) -> Callable[[F], F]:
    """Add to the command an option for each field of `model` not in `handled` (the fields the command reads
    itself) nor in the face's `skips` (each with why: contract/verbs.py), passed to the command as `fields` (only
    those given: a default stays the verb's)."""
    done = set(handled) | set(face.skips)

    def decorate(fn: F) -> F:
        own = [p for p in inspect.signature(fn).parameters.values() if p.name != "fields"]
        extra = {name: field for name, field in model.model_fields.items() if name not in done}
        params = own + [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=_option_type(field.annotation),
                              default=typer.Option(None, face.names.get(name, option_name(name)),
                                                   help=field.description or name))
            for name, field in extra.items()]

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in extra if name in kwargs}
            return fn(*args, **kwargs, fields={k: v for k, v in given.items() if v is not None})

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return command  # type: ignore[return-value]

    return decorate
