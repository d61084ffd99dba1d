"""jieba without its dictionary in memory (store/jieba_light.py): the ASCII subset cuts every text without
a Chinese character, the hashed dictionary every text with one, exactly as jieba with its whole dictionary
does; a dictionary someone loaded or changed leaves everything to jieba."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

import jieba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hippocampus.store import jieba_light

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def full() -> jieba.Tokenizer:
    tok = jieba.Tokenizer()
    tok.initialize()
    return tok


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> jieba.Tokenizer:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIPPOCAMPUS_HOME", str(home))
        freq, total = jieba_light.ascii_subset()
        assert jieba_light.cache_path().is_file()  # built once, then read
        assert jieba_light.ascii_subset() == (freq, total)
    tok = jieba.Tokenizer()
    tok.FREQ, tok.total, tok.initialized = freq, total, True
    return tok


@pytest.fixture(scope="module")
def hashed(tmp_path_factory: pytest.TempPathFactory) -> jieba.Tokenizer:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIPPOCAMPUS_HOME", str(home))
        table = jieba_light.hashed_table()
        assert jieba_light.hashed_path().is_file() and isinstance(table, np.memmap)  # built once, then mapped
        assert np.array_equal(jieba_light.hashed_table(), table)
    freq = jieba_light.HashedFreq(table)
    tok = jieba.Tokenizer()
    tok.FREQ, tok.total, tok.initialized = freq, freq.total, True
    return tok


def test_the_hashed_dictionary_answers_every_entry_as_jiebas(full: jieba.Tokenizer, hashed: jieba.Tokenizer) -> None:
    assert hashed.total == full.total and len(hashed.FREQ.keys) == len(full.FREQ)
    words = list(full.FREQ.items())
    for word, freq in words[:: len(words) // 5000]:  # every 100th entry or so: words and bare prefixes (0)
        assert hashed.FREQ[word] == freq and word in hashed.FREQ
    for absent in ("北京北京北京", "zzzz", "花生过敏了吗", ""):
        assert absent not in full.FREQ and absent not in hashed.FREQ and hashed.FREQ.get(absent) is None
    with pytest.raises(KeyError):
        hashed.FREQ["北京北京北京"]


HAN_CHARS = list("我们你他她的是在有不了人这中大为上个国到说们时要就出会可也对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心本前开但因只从想实")
HAN_TEXT = st.lists(st.one_of(st.sampled_from(["北京", "花生", "过敏", "计划", "旅行", "钢琴", "青霉素", "C++", "T恤", "2024年"]),
                              st.sampled_from(HAN_CHARS), st.sampled_from(list("，。！？ ab1\n")), st.text(max_size=3)),
                    min_size=1, max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(HAN_TEXT)
def test_text_with_chinese_is_cut_as_jieba_cuts_it(full: jieba.Tokenizer, hashed: jieba.Tokenizer, text: str) -> None:
    assert list(hashed.cut_for_search(text)) == list(full.cut_for_search(text))
    assert list(hashed.cut(text)) == list(full.cut(text))
    assert list(hashed.cut(text, HMM=False)) == list(full.cut(text, HMM=False))
    assert list(hashed.cut(text, cut_all=True)) == list(full.cut(text, cut_all=True))


def test_real_chinese_sentences_are_cut_as_jieba_cuts_them(full: jieba.Tokenizer, hashed: jieba.Tokenizer) -> None:
    texts = [t for line in (DATA / "crosslang_pairs.jsonl").read_text().splitlines() if line.strip()
             for t in json.loads(line).values() if isinstance(t, str) and jieba_light.HAN.search(t)]
    assert len(texts) > 20
    for text in texts:
        assert list(hashed.cut_for_search(text)) == list(full.cut_for_search(text)), text


def test_a_damaged_hashed_dictionary_is_rebuilt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    path = jieba_light.hashed_path()
    path.parent.mkdir(parents=True)
    for planted in (b"not numpy", np.zeros((3, 4), dtype=np.uint64), np.zeros((2, 4), dtype=np.int32)):
        if isinstance(planted, bytes):
            path.write_bytes(planted)
        else:
            np.save(path, planted)
        table = jieba_light.hashed_table()
        assert table.shape[0] == 2 and table.shape[1] > 400_000 and jieba_light.HashedFreq(table).get("北京")


def test_the_subset_is_the_dictionarys_ascii_entries(full: jieba.Tokenizer, light: jieba.Tokenizer) -> None:
    assert light.total == full.total
    assert light.FREQ == {k: v for k, v in full.FREQ.items() if jieba_light.WORD.fullmatch(k)}
    assert {"C++", "AT&T", "c#"} <= {k for k, v in light.FREQ.items() if v}  # real words, not only prefixes
    assert len(light.FREQ) < 100


# the dictionary's ASCII entries (words and prefixes of words like "T恤") among ordinary characters
DICT_WORDS = ["C++", "AT&T", "c#", "C#", "T", "AT", "A", "B", "X", "K", "KTV", "U", "O2O"]
TEXT = st.lists(st.one_of(st.sampled_from(DICT_WORDS), st.sampled_from(list("ab cC+#&._%-0129 \n\t\r,!?'\"éÜñ→😀カナ한")),
                          st.text(max_size=6)), max_size=25).map("".join).filter(lambda t: not jieba_light.HAN.search(t))


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_text_without_chinese_is_cut_as_jieba_cuts_it(full: jieba.Tokenizer, light: jieba.Tokenizer, text: str) -> None:
    assert list(light.cut_for_search(text)) == list(full.cut_for_search(text))
    assert list(light.cut(text)) == list(full.cut(text))
    assert list(light.cut(text, HMM=False)) == list(full.cut(text, HMM=False))
    assert list(light.cut(text, cut_all=True)) == list(full.cut(text, cut_all=True))


def test_real_english_sentences_are_cut_as_jieba_cuts_them(full: jieba.Tokenizer, light: jieba.Tokenizer) -> None:
    texts = [t for line in (DATA / "crosslang_pairs.jsonl").read_text().splitlines() if line.strip()
             for t in json.loads(line).values() if isinstance(t, str) and not jieba_light.HAN.search(t)]
    assert len(texts) > 20
    for text in texts:
        assert list(light.cut_for_search(text)) == list(full.cut_for_search(text)), text


def test_routing_leaves_chinese_and_a_loaded_dictionary_to_jieba(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    jieba_light.install()
    jieba_light.install()  # idempotent: one wrapper, not two
    assert jieba.cut.__wrapped__.__self__ is jieba.cut_for_search.__wrapped__.__self__  # type: ignore[attr-defined]
    fresh = jieba.Tokenizer()  # a dictionary nobody loaded yet, as in a new process
    monkeypatch.setattr(jieba, "dt", fresh)
    assert [t for t in jieba.cut_for_search("Where does Alice live? C++ at AT&T") if t.strip()] == \
        ["Where", "does", "Alice", "live", "?", "C++", "at", "AT&T"]
    assert not fresh.initialized  # answered without the dictionary
    assert "北京" in list(jieba.cut("我们计划去北京旅行")) and not fresh.initialized  # Chinese too: the hashed one
    fresh.initialized = True  # once the dictionary is loaded, jieba answers everything
    seen = []
    monkeypatch.setattr(jieba_light, "_light", lambda: seen.append(1))
    monkeypatch.setattr(jieba_light, "_hashed", lambda: seen.append(2))
    list(jieba.cut("plain text"))
    list(jieba.cut("我们计划去北京旅行"))
    assert seen == []


def test_a_damaged_or_foreign_cache_is_rebuilt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    path = jieba_light.cache_path()
    path.parent.mkdir(parents=True)
    for planted in (b"not marshal", marshal.dumps(({"天": 5}, 7)), marshal.dumps(([], 7))):
        path.write_bytes(planted)
        freq, total = jieba_light.ascii_subset()
        assert "C++" in freq and total > 1_000_000
        assert marshal.loads(path.read_bytes()) == (freq, total)
