"""Fact extraction for the fact guard (facts.py holds the API, the matching and the union):
regular expressions for numbers with units, dates and times, capitalised and rare terms,
jieba.posseg for Chinese nouns and a determiner rule for English ones, over per-character
NFKC text whose spans map back to the original. Pure and cached (the same memory text is
checked again and again)."""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ..text import HAS_CJK as IS_CJK  # also read by lifecycle/compress

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_NUM = "[零〇一二两三四五六七八九十百千万亿]+"
CN_NUM_CHARS = set("零〇一二两三四五六七八九十百千万亿")
_NUM = rf"(?:\d+(?:\.\d+)?|{_CN_NUM})"
_EN_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split()) if i >= 2}
_EN_NUMBERS |= {"fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "hundred": 100}
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
          r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split(), 1)}
_CN_WEEKDAY = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}

# --- dates and times (found first; numbers and names skip what they cover)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)")
_CN_DATE = re.compile(rf"(?:(\d{{4}}|[〇零一二三四五六七八九]{{4}})年)?({_NUM})月(?:({_NUM})[日号])?|(\d{{4}}|[〇零一二三四五六七八九]{{4}})年")
_EN_DATE = re.compile(
    rf"\b(?:({_MONTH})\.?[ \t]+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?[ \t]+(\d{{4}})\b)?"  # May 3rd, 2024
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?({_MONTH})\b\.?(?:,?[ \t]+(\d{{4}})\b)?)"  # 3 May / the 3rd of May
)
_EN_MONTH = re.compile(rf"\b(?:in|of|since|until|till|by|early|late|mid|next|last|this)[ \t]+({_MONTH})\b(?:[ \t]+(\d{{4}})\b)?")
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|(?<![零〇一二两三四五六七八九十\d])(?:周|星期|礼拜)([一二三四五六日天])", re.I)
_EN_TIME = re.compile(r"(?<![\d:])(\d{1,2})(?::(\d{2}))?[ \t]*(am|pm|a\.m\.|p\.m\.)(?![a-z])|(?<![\d:.])(\d{1,2}):(\d{2})(?::\d{2})?(?![\d:])", re.I)
_CN_TIME = re.compile(r"(上午|下午|晚上|早上|早晨|清晨|中午|凌晨|傍晚|夜里|晚)?(\d{1,2}|[零一二两三四五六七八九十]{1,3})[点时](?:(半|一刻|三刻)|(\d{1,2}|[零一二三四五六七八九十]{1,3})分?)?")
_PM = ("下午", "晚上", "傍晚", "夜里", "晚")

# --- numbers
_PERCENT_ZH = re.compile(rf"百分之({_NUM})")
_CURRENCY = re.compile(r"([$€£¥])[ \t]?(\d+(?:,\d{3})*(?:\.\d+)?)")
_ARABIC = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(st|nd|rd|th)?(?![\d])")
_CN_NUMBER = re.compile(_CN_NUM)
_EN_WORD_NUMBER = re.compile(r"\b(" + "|".join(_EN_NUMBERS) + r")\b", re.I)
_MEASURE = re.compile(
    "(个月|个小时|公里|千米|公斤|千克|小时|分钟|块钱|毫升|厘米|毫米|平方米|平米|星期|周岁|[个只条次天年岁元块米斤克秒片粒颗杯瓶本张位名人遍层楼台辆件双套间家口碗盘份顿趟场节页首部门棵朵支枚袋盒包箱度倍分周%])"
)
_ARTICLE_LIKE = set("个只位名件条张本家次种")
_UNIT_WORD = re.compile(r"[ \t]?([A-Za-z]{1,15}|°[CF]|%)")
_UNIT_ALIAS = {alias: unit for line in (  # one unit per line: its name, then every spelling of it
    "km kilometer kilometre 公里 千米", "kg kilo kilogram 公斤 千克", "% percent pct", "cny 元 块 块钱 yuan rmb ¥",
    "usd $ dollar buck", "eur € euro", "gbp £", "h hour hr 小时 个小时", "min minute 分钟", "s second sec 秒", "m meter metre 米",
    "cm 厘米", "mm 毫米", "ml 毫升", "day 天", "week 周 星期", "month 个月", "year 年", "times time 次",
) for unit, *aliases in [line.split()] for alias in (unit, *aliases)}
_NOT_UNITS = set(
    "a an and or of to in on at for with by from the is are was were am be been i we you he she it they my our your his her "
    "their that this these those but so if as than then more less about and or per each every".split()
)

# --- names and rare terms
_WORD = re.compile(r"(?<![0-9])[A-Za-z][A-Za-z0-9]*(?:['’\-][A-Za-z0-9]+)*")
_SENTENCE_END = set(".!?。！？:\n")
_OPENERS = set("\"'“‘«([{（【「『 \t")
_TITLES = {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no"}
_NOT_NAMES = {"i", "i'm", "i've", "i'll", "i'd", "ok", "am", "pm", "a", "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "user"}

# --- Chinese nouns
_NOUN_STOP = set(
    "时候 东西 事情 问题 情况 地方 方面 时间 用户 样子 感觉 部分 之后 以后 以前 大家 人家 自己 什么 这样 那样 一下 有点 一点 "
    "今天 昨天 明天 前天 后天 今晚 昨晚 明晚 上午 下午 晚上 早上 中午 凌晨 傍晚 周末 现在 刚才 最近".split()
)
# --- English nouns: the words after a determiner or a possessive ("my knees", "a window seat",
# "Anna's dog"), keyed by their Snowball stem so "knee" keeps "knees"; no tagger, so an adjective
# there counts too (a false positive costs a retry or a repeated clause, never a lost fact)
_DETERMINERS = set("a an the my your his her its our their this that these those another every each".split())
_EN_NOT_NOUNS = _NOT_UNITS | set(
    "some any no not all both few lot lots bit couple kind sort way thing things stuff time times day days week weeks "
    "month months year years morning afternoon evening night tonight today tomorrow yesterday weekend moment while rest "
    "end start one ones same other others whole own only new old good great best better nice big small little first last "
    "next few many much most least very really just also still even too quite pretty such what which who whose how "
    "user people guy guys one's has have had do does did get got will would can could should may might must".split()
)
_RELATIVE_ZH = re.compile("今天|昨天|明天|前天|后天|今晚|昨晚|明晚|今早|上午|下午|晚上|早上|中午|凌晨|傍晚|刚才|刚刚")


@dataclass(frozen=True)
class Fact:
    """One fact: equal (and hashed) by kind and normalised key; `text` is how the source wrote
    it and `start`/`end` where (in the original text), for the union's clause lookup."""

    kind: str
    key: str
    text: str = field(compare=False)
    start: int = field(default=0, compare=False)
    end: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return self.text


def fold(text: str) -> str:
    """Per-character NFKC, lower case, whitespace collapsed (so a substring stays a substring)."""
    return " ".join("".join(unicodedata.normalize("NFKC", ch) for ch in text).lower().split())


# ------------------------------------------------------------------ extraction
@lru_cache(maxsize=1024)  # texts up to 64 KiB each: bounded memory
def extract(text: str) -> tuple[Fact, ...]:
    norm, back = _normalise(text)
    taken = [False] * len(norm)
    found: dict[Fact, Fact] = {}

    def add(kind: str, key: str, start: int, end: int) -> None:
        if start >= end or any(taken[start:end]):
            return
        for i in range(start, end):
            taken[i] = True
        o_start, o_end = back[start], back[end - 1] + 1
        fact = Fact(kind, key, text[o_start:o_end], o_start, o_end)
        found.setdefault(fact, fact)

    _dates_and_times(norm, add)
    _names(norm, add)  # before numbers: "A320" and "COVID-19" are names, not 320 and 19
    _numbers(norm, add, taken)
    if IS_CJK.search(norm):
        _nouns(norm, add, taken)
    _english_nouns(norm, add)
    return tuple(found.values())


def _normalise(text: str) -> tuple[str, list[int]]:
    """Per-character NFKC (full-width digits and punctuation to ASCII) and, for each
    character of the result, the index of the original character it came from."""
    parts = [unicodedata.normalize("NFKC", ch) for ch in text]
    return "".join(parts), [i for i, part in enumerate(parts) for _ in part]


def cn_int(s: str) -> int:
    """A Chinese numeral as an int: "四十二" 42, "两百零五" 205, "三万" 30000, "二〇二四" 2024."""
    if s.isdigit():
        return int(s)
    if all(ch in _CN_DIGITS for ch in s):
        return int("".join(str(_CN_DIGITS[ch]) for ch in s))
    total = section = num = 0
    for ch in s:
        if ch in _CN_DIGITS:
            num = _CN_DIGITS[ch]
        elif ch in "十百千":
            section += (num or 1) * {"十": 10, "百": 100, "千": 1000}[ch]
            num = 0
        elif ch in "万亿":
            total += (section + num) * (10**4 if ch == "万" else 10**8)
            section = num = 0
    return total + section + num


def _value(s: str) -> str:
    s = s.replace(",", "")
    v = float(s) if re.fullmatch(r"\d+(?:\.\d+)?", s) else float(cn_int(s) if _CN_NUMBER.fullmatch(s) else _EN_NUMBERS.get(s.lower(), 0))
    return str(int(v)) if v == int(v) else repr(v)


def unit_name(raw: str) -> str:
    """A unit's canonical name: "kilometres" and "公里" are "km", "tablets" is "tablet"."""
    u = raw.lower()
    if u not in _UNIT_ALIAS and len(u) > 3:
        u = u[:-3] + "y" if u.endswith("ies") else u[:-1] if u.endswith("s") and not u.endswith("ss") else u
    return _UNIT_ALIAS.get(u, u)


def _dates_and_times(norm: str, add) -> None:
    for m in _ISO_DATE.finditer(norm):
        add("date", f"{int(m[1])}-{int(m[2]):02d}-{int(m[3]):02d}", m.start(), m.end())
    for m in _CN_DATE.finditer(norm):
        if m[4]:
            add("date", f"{cn_int(m[4])}--", m.start(), m.end())
            continue
        month, day = cn_int(m[2]), cn_int(m[3]) if m[3] else 0
        if 1 <= month <= 12 and day <= 31:
            add("date", f"{cn_int(m[1]) if m[1] else ''}-{month:02d}-{f'{day:02d}' if day else ''}", m.start(), m.end())
    for m in _EN_DATE.finditer(norm):
        name, day, year = (m[1], m[2], m[3]) if m[1] else (m[5], m[4], m[6])
        if 1 <= int(day) <= 31:
            add("date", f"{year or ''}-{_MONTHS[name.lower()[:3]]:02d}-{int(day):02d}", m.start(), m.end())
    for m in _EN_MONTH.finditer(norm):
        add("date", f"{m[2] or ''}-{_MONTHS[m[1].lower()[:3]]:02d}-", m.start(1), m.end())
    for m in _WEEKDAY.finditer(norm):
        add("date", f"weekday {_WEEKDAYS[m[1].lower()] if m[1] else _CN_WEEKDAY[m[2]]}", m.start(), m.end())
    for m in _EN_TIME.finditer(norm):
        if m[3]:
            hour, minute = int(m[1]), int(m[2] or 0)
            if 1 <= hour <= 12 and minute < 60:
                hour = hour % 12 + (12 if m[3].lower().startswith("p") else 0)
                add("time", f"{hour}:{minute:02d}", m.start(), m.end())
        elif int(m[4]) < 24 and int(m[5]) < 60:
            add("time", f"{int(m[4])}:{m[5]}", m.start(), m.end())
    for m in _CN_TIME.finditer(norm):
        period, hour = m[1] or "", cn_int(m[2])
        minute = {"半": 30, "一刻": 15, "三刻": 45}.get(m[3] or "", cn_int(m[4]) if m[4] else 0)
        if m[2] == "一" and not period and not (m[3] or m[4]):
            continue  # "好一点", "有一点": a little, not one o'clock
        if hour <= 24 and minute < 60:
            if (period in _PM and hour < 12) or (period == "中午" and hour < 3):
                hour += 12
            add("time", f"{hour % 24}:{minute:02d}", m.start(), m.end())


def _numbers(norm: str, add, taken: list[bool]) -> None:
    for m in _PERCENT_ZH.finditer(norm):
        add("number", f"{_value(m[1])}|%", m.start(), m.end())
    for m in _CURRENCY.finditer(norm):
        add("number", f"{_value(m[2])}|{_UNIT_ALIAS[m[1]]}", m.start(), m.end())
    for rx in (_ARABIC, _CN_NUMBER, _EN_WORD_NUMBER):
        for m in rx.finditer(norm):
            if any(taken[m.start() : m.end()]):
                continue
            value = _value(m[1] + (f".{m[2]}" if m[2] else "")) if rx is _ARABIC else _value(m[0])
            end, unit = m.end(), ""
            if rx is _ARABIC and norm[end : end + 1] in ("万", "亿"):
                value, end = _value(str(float(value) * (10**4 if norm[end] == "万" else 10**8))), end + 1
            measure = _MEASURE.match(norm, end)
            if measure:
                if rx is _CN_NUMBER and value == "1" and measure[1] in _ARTICLE_LIKE:
                    continue  # "一个朋友", "一次": an article, like English "a"
                unit, end = unit_name(measure[1]), measure.end()
            elif rx is _CN_NUMBER:
                continue  # a Chinese numeral without a measure word is a word ("一起", "万一")
            else:
                word = _UNIT_WORD.match(norm, end)
                glued_to_digits = word is not None and word[1][0].isalpha() and norm[word.end() : word.end() + 1].isdigit()
                if word and word[1].lower() not in _NOT_UNITS and not glued_to_digits:
                    unit, end = unit_name(word[1]), word.end()
            if rx is _EN_WORD_NUMBER and not unit:
                continue  # "two" alone is too common a word to hold on to
            add("number", f"{value}|{unit}", m.start(), end)


def _sentence_start(norm: str, i: int) -> bool:
    j = i - 1
    while j >= 0 and norm[j] in _OPENERS:
        j -= 1
    if j < 0 or norm[j] == "\n":
        return True
    if norm[j] not in _SENTENCE_END:
        return False
    if norm[j] == ".":  # "Dr. Smith", "e.g. Python": an abbreviation, not a sentence end
        word = re.search(r"([A-Za-z.]+)$", norm[:j])
        return not (word and word[1].lower() in _TITLES)
    return True


def _names(norm: str, add) -> None:
    run: list[tuple[int, int]] = []  # consecutive capitalised words: "New York" is one name

    def flush() -> None:
        if run:
            start, end = run[0][0], run[-1][1]
            add("name", fold(norm[start:end]), start, end)
            run.clear()

    for m in _WORD.finditer(norm):
        word = re.sub(r"['’]s$", "", m[0])
        start, end = m.start(), m.start() + len(word)
        rare = any(c.isdigit() for c in word) or (len(word) >= 2 and word.isupper()) or bool(re.match(r"[a-z]+[A-Z]", word))
        capital = word[0].isupper() and not word.isupper() and not _sentence_start(norm, start)
        if (rare or capital) and word.lower() not in _NOT_NAMES and len(word) > 1:
            if run and (not capital or norm[run[-1][1] : start] != " "):
                flush()
            run.append((start, end))
            if rare:
                flush()
        else:
            flush()
    flush()


def _nouns(norm: str, add, taken: list[bool]) -> None:
    for word, flag, start in _posseg(norm):
        end = start + len(word)
        if (flag.startswith("n") and len(word) >= 2 and IS_CJK.match(word) and word not in _NOUN_STOP
                and not _RELATIVE_ZH.search(word) and not any(taken[start:end])):
            add("noun", word, start, end)


def _english_nouns(norm: str, add) -> None:
    """Up to two words after a determiner or a possessive, up to the first function word or
    punctuation; "noun" facts keyed "en:<stem>" (facts.kept matches any word of that stem)."""
    words = list(_WORD.finditer(norm))
    for i, m in enumerate(words):
        lead = m[0].lower()
        if lead not in _DETERMINERS and not re.search(r"['’]s$", lead):
            continue
        prev_end = m.end()
        for nxt in words[i + 1 : i + 3]:
            word = nxt[0].lower()
            if (norm[prev_end : nxt.start()].strip(" \t") or word in _DETERMINERS or word in _EN_NOT_NOUNS
                    or len(word) < 3 or word.endswith("ly") or not word.isalpha()):
                break
            add("noun", f"en:{en_stem(word)}", nxt.start(), nxt.end())
            prev_end = nxt.end()


@lru_cache(maxsize=4096)
def en_stem(word: str) -> str:
    """The Snowball (Porter 2) stem of a lower-case English word: "knees" and "knee" are "knee"."""
    return _stemmer().stemWord(word)


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def _posseg(text: str) -> Iterable[tuple[str, str, int]]:
    import jieba
    import jieba.posseg as pseg

    jieba.setLogLevel(logging.WARNING)
    pos = 0
    for pair in pseg.cut(text):
        yield pair.word, pair.flag, pos
        pos += len(pair.word)
