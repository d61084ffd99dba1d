"""The analyzer behind the BM25 function on `text`: jieba (Chinese words, English tokens, lower-cased)
plus a stop filter.

Why a stop filter: without it a Chinese question and a Chinese memory "match" on 的/了/我 and
English ones on the/to/did, and those matches decide BM25's order whenever the real words do not
occur (the bilingual test in tests/retrieval/test_retrieval.py; LoCoMo: docs/decisions.md, "Stop words").
jieba also emits punctuation as tokens; they are dropped here too. Milvus servers accept the same
parameters (`filter: [{type: stop, stop_words: [...]}]`).
"""

from __future__ import annotations

from typing import Any

ENGLISH = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves
s t d ll m re ve don didn doesn isn wasn weren hasn haven hadn won wouldn shouldn couldn
""".split()

CHINESE = """
的 了 着 过 地 得 之 与 及 和 或 而 且 并 也 都 就 还 又 再 才 只 很 太 更 最 被 把 对 从 到 给 让 向 在 于 以 为
是 有 没 没有 不 吗 呢 吧 啊 呀 哦 嗯 哪 哪里 哪儿 什么 怎么 怎样 为什么 谁 几 多少 这 那 这个 那个 这些 那些
我 你 他 她 它 我们 你们 他们 她们 它们 自己 个 一个 些 一些 上 下 里 中
""".split()

PUNCTUATION = list(".,!?;:'\"()[]{}<>-_/\\|@#$%^&*+=~`…—–") + list("，。！？；：、“”‘’《》（）【】「」『』～·")

STOP_WORDS: list[str] = sorted(set(ENGLISH) | set(CHINESE) | set(PUNCTUATION))


def analyzer_params() -> dict[str, Any]:
    """Milvus analyzer parameters for the `text` field (part of the schema: see SCHEMA_VERSION)."""
    return {"tokenizer": "jieba", "filter": [{"type": "stop", "stop_words": STOP_WORDS}]}
