"""Pull one JSON object out of what a model actually says (fences, prose, trailing text)."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The first complete JSON object or array in `text`; ValueError when there is none."""
    if text is None:
        raise ValueError("empty reply")
    text = text.strip()
    if not text:
        raise ValueError("empty reply")
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        for i, ch in enumerate(candidate):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(candidate[i:])
                    return value
                except json.JSONDecodeError:
                    continue
    raise ValueError(f"no JSON object in reply: {text[:200]!r}")
