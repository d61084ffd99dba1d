"""Offline rules for the TripleExtractor (graph memory): an honest degraded mode, no understanding.

Chinese entities, from jieba's part-of-speech tags: nr is a person (2-4 characters, starting with a
common surname or 小/老/阿: jieba tags "过敏" nr too), ns a place, nt an organisation, nrt a thing; a
run of named tokens (杭州 西湖区) or of common nouns (n, nz, vn; 2+ characters each) is one entity,
never a mix; a lone vn ("工作"), activities (跑步) and a stop list (时候, 东西, 今天, 妈妈...) are none.
《书名》, 「名字」 and “名字” are things.
English entities: spans of Capitalised words ("Bank of America"), possessive 's dropped, minus words
capitalised for other reasons (I, The, My, Yesterday, Wow...). A one-word span opening a sentence
counts only when it is a known speaker or appears mid-sentence too. A name only addressed ("Thanks,
Mel!", "Gina, good luck") is no mention and dropped. Months and weekdays (May and June as names too)
are dropped, not typed "time": the memory's timestamp holds its time; a "Friday" node links nothing.
A span, up to two lower-case words and a head noun is one entity ("LGBTQ support group"). Types from
cues only: a known speaker, a title (Dr.), a kinship word or "met/named" before it: person; after
in/to/from/near: place; a head noun (Park, University, club, festival): place / organisation / event;
else "thing". Quoted title-cased names ("Becoming", up to six words) are things; numbers never.

Triples only where a pattern is certain: no co-mention relation, no guessing. "I" is the speaker.
- English: I live in / moved to X (lives in; lived in), I'm from X (from), I work at / for X (works
  at), I went to / visited X, for a named X; "don't"/"never" before the verb negates. I (don't) like /
  love / enjoy / hate X (likes; hate and dislike negated; really, always, often... the frequency), X
  named or one or two lower-case words ("painting"), then the clause ends (in Chinese too: "I love the Miami vibe"
  gives nothing). My sister / friend / ... (named) X: (X, "sister of", I): the relative is the subject.
- Chinese: 我住在/搬到X (住在), 我来自X (来自), 我在X工作/上班 (工作于), 我(很/不)喜欢/爱/讨厌X (喜欢,
  negated, 很 the frequency), 我的妹妹(叫)X (X, 妹妹, I). A negated 住/在 clause gives nothing.
Conditions are never extracted offline (always ""): that needs the understanding this lacks.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from ...text import CJK, HAS_CJK
from . import rule

_PREFIX = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2})\s*:\s+")

# --- English --------------------------------------------------------------------------------
_CAP = r"[A-Z][A-Za-z0-9&+-]*(?:['’][A-Za-z]+)*"
_SPAN = re.compile(rf"(?<![A-Za-z0-9'’]){_CAP}(?:[ \t]+(?:(?:of|of the|de|du|da|von|van|la|le)[ \t]+)?{_CAP})*")
_STOP_CAPS = set("""i i'm i've i'd i'll im ive the a an my our your his her their its we you he she they it this that these
those there here what who whom when where why how which whose yes no yeah yep nope oh ooh wow hey hi hello thanks thank well so
and but or if then also just yesterday today tomorrow tonight last next totally sure great cool nice awesome okay ok
haha lol omg btw congrats congratulations sorry please let let's good bye anyway plus actually definitely absolutely
maybe perhaps oops aww ah hmm mr mrs ms dr prof mom mum dad mommy daddy grandma grandpa sis bro honestly agreed
exactly true right love glad happy amazing wonderful same still not any anything something everything nothing
some all both every each gonna wanna can could would should will did do does was were is are has have had been
being once after before since until while because though although as at in on for with from by about to of""".split())
_TIME = set("january february march april may june july august september october november december apr jul aug sept oct "
            "nov dec monday tuesday wednesday thursday friday saturday sunday tue tues wed thu thur thurs fri".split())
_HEADS = dict.fromkeys("park museum library hospital street avenue road lake river mountain beach city island " "station airport cafe café restaurant center centre hall state county gallery gym studio".split(), "place")
_HEADS |= dict.fromkeys("group club team band agency company church school university college " "institute foundation association society shelter inc corp ltd bank program programme".split(), "organisation")
_HEADS |= dict.fromkeys("festival conference parade concert workshop marathon race fair show party " "ceremony retreat camp class".split(), "event")
_HEAD_AFTER = re.compile(r"((?:[ \t]+[a-z][a-z-]*){0,2}?)[ \t]+(" + "|".join(sorted(_HEADS, key=len, reverse=True)) + r")s?\b")
_FUNCTION = set("the a an to of and or but in on at for with from by is was are were be been it this that my your "
                "our his her their its as so than then very too not no".split())
_KIN_EN = ("sister|brother|mom|mum|mother|dad|father|wife|husband|partner|friend|daughter|son|boyfriend|girlfriend|"
           "cousin|aunt|uncle|grandma|grandmother|grandpa|grandfather|niece|nephew|boss|colleague|coworker|roommate")
_INITIAL = re.compile(r"(?:^|[.!?…。！？\n\"“(—–]|\s-)\s*$")
_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof)\.?\s*$")
_PERSON_BEFORE = re.compile(rf"\b(?:met|meet|named|called|told|asked|married|{_KIN_EN}),?\s*$", re.I)
_PERSON_AFTER = re.compile(r"^\s+(?:said|says|told|asked)\b")
_GREETING = re.compile(r"\b(?:hey|hi|hello|thanks|thank you|bye|congrats|congratulations|dear|yo|sorry|cheers|wow|oh|yes|"
                       r"yeah|yep|ok|okay|well|great|cool|right|good|night|morning|sure|awesome|nice|sweet)[,!]?\s*$", re.I)
_PLACE_BEFORE = re.compile(r"\b(?:in|to|from|near|around|visited|visit|visiting|across|towards?)\s+(?:the\s+)?$", re.I)
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,60})[\"”]")

# --- Chinese --------------------------------------------------------------------------------
_SURNAMES = set("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜"
                "崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤欧司诸上小老阿")
_STOP_ZH = set("""时候 东西 事情 问题 情况 地方 方面 时间 用户 样子 感觉 部分 大家 人家 自己 一下 一点 今天 昨天 明天 前天 后天
今晚 昨晚 周末 现在 刚才 最近 工作 生活 学习 朋友 家人 孩子 妈妈 爸爸 母亲 父亲 老婆 老公 妻子 丈夫 女朋友 男朋友 姐姐 妹妹 哥哥
弟弟 女儿 儿子 同学 同事 老板 室友 过敏 心情 东东 办法 原因 结果 时间段 日子 晚上 早上 上午 下午 中午""".split())
_ACTIVITY_ZH = set("跑步 读书 上班 上学 学习 运动 锻炼 旅游 旅行 吃饭 睡觉 购物 散步 游泳 爬山 唱歌 跳舞 画画 做饭 看书 健身".split())
_KIN_ZH = "女朋友|男朋友|妈妈|爸爸|母亲|父亲|老婆|老公|妻子|丈夫|姐姐|妹妹|哥哥|弟弟|女儿|儿子|朋友|同学|同事|老板|室友"
_RUN_FLAGS = {"n", "nz", "vn", "ns", "nt"}
_RUN_TYPE = {"ns": "place", "nt": "organisation", "vn": "concept"}
_BOOK = re.compile(rf"[《「『]([^》」』\n]{{1,30}})[》」』]|“([{CJK}]{{2,12}})”")

Entity = tuple[str, str, int, int]  # name, type, start, end (in the text)


def _vocative(before: str, after: str, initial: bool) -> bool:
    """A name only addressed ("Thanks, Mel!", "Gina, good luck", "sweet, Melanie!") is no mention."""
    return bool((_GREETING.search(before) and re.match(r"\s*(?:[,!?.]|$)", after))
                or (initial and re.match(r"\s*,", after)) or (re.search(r",\s*$", before) and re.match(r"\s*(?:[!?.]|$)", after)))


def _dropped(word: str) -> bool:
    key = re.sub(r"['’]s$", "", word).lower()
    return key in _STOP_CAPS or key in _TIME or key[:-1] in _TIME or len(word) == 1


def _strip_words(words: list[str]) -> list[str]:
    """A span without its stop and time words at either end ("The Hunger Games" -> "Hunger Games")."""
    while words and _dropped(words[0]):
        words = words[1:]
    while words and _dropped(words[-1]):
        words = words[:-1]
    return words


def _english(text: str, names: Iterable[str]) -> list[Entity]:
    known = {n.lower() for n in names}
    spans = []  # (match, words left after the stop words, starts a sentence)
    for m in _SPAN.finditer(text):
        raw = m.group().rstrip("-&").split()
        words = _strip_words(raw)
        if len(words) > 1 and words[0] == raw[0] and re.search(r"(?:ing|ed|ly)$", words[0]) and _INITIAL.search(text[: m.start()]):
            words = words[1:]  # "Exploring Japan": a sentence's first verb or adverb, not part of the name
        if words:
            start = m.start() + m.group().index(words[0])
            spans.append((m, words, words[0] == raw[0] and bool(_INITIAL.search(text[:start])) and not _TITLE.search(text[:start])))
    mid = {words[0].lower() for _, words, initial in spans if not initial}
    out: list[Entity] = []
    for m, words, initial in spans:
        name = re.sub(r"['’]s$", "", " ".join(words))
        start = m.start() + m.group().index(words[0])
        end = start + len(name)
        before, after = text[:start], text[end:]
        if initial and len(words) == 1 and name.lower() not in known and name.lower() not in mid:
            continue
        if len(words) == 1 and _vocative(before, after, initial):
            continue
        head = _HEAD_AFTER.match(after)
        if head and not set(head.group(1).split()) & _FUNCTION and not re.search(r"['’]s$", m.group()):
            name, end = text[start : end + head.end()], end + head.end()
            kind = _HEADS[head.group(2)]
        elif words[-1].lower() in _HEADS:
            kind = _HEADS[words[-1].lower()]
        elif name.lower() in known or _TITLE.search(before) or _PERSON_BEFORE.search(before) or _PERSON_AFTER.match(after):
            kind = "person"
        elif _PLACE_BEFORE.search(before):
            kind = "place"
        else:
            kind = "thing"
        out.append((name, kind, start, end))
    for m in _QUOTED.finditer(text):
        words = m.group(1).split()
        if len(words) <= 6 and all(w[0].isupper() or len(w) <= 3 for w in words) and not re.search(r"[.!?,;:]$", m.group(1)):
            out.append((m.group(1).strip(), "thing", m.start(1), m.end(1)))
    return out


@lru_cache(maxsize=2048)
def _posseg(text: str) -> tuple[tuple[str, str, int], ...]:
    import jieba
    import jieba.posseg as pseg

    jieba.setLogLevel(logging.WARNING)
    out, pos = [], 0
    for pair in pseg.cut(text):
        out.append((pair.word, pair.flag, pos))
        pos += len(pair.word)
    return tuple(out)


def _is_name(word: str) -> bool:
    return 2 <= len(word) <= 4 and bool(re.fullmatch(f"[{CJK}]+", word)) and word[0] in _SURNAMES and word not in _STOP_ZH


def _chinese(text: str) -> list[Entity]:
    """Names by tag; a run of named tokens (ns, nt: "杭州 西湖区") or of common nouns (n, nz, vn) is one
    entity, never a mix ("西湖" and "跑步", not "西湖跑步"); nothing inside 《》 but the title."""
    out: list[Entity] = []
    run: list[tuple[str, str, int]] = []
    books = [(m.start(g), m.end(g)) for m in _BOOK.finditer(text) for g in (1 if m.group(1) is not None else 2,)]
    out += [(text[a:b].strip(), "thing", a, b) for a, b in books if text[a:b].strip()]

    def flush() -> None:
        if run and not (len(run) == 1 and run[0][1] == "vn"):
            name = "".join(w for w, _, _ in run)
            out.append((name, _RUN_TYPE.get(run[-1][1], "thing"), run[0][2], run[0][2] + len(name)))
        run.clear()

    for word, flag, start in _posseg(text):
        cjk = len(word) >= 2 and bool(HAS_CJK.match(word)) and word not in _STOP_ZH and word not in _ACTIVITY_ZH
        if run and (flag in ("ns", "nt")) != (run[-1][1] in ("ns", "nt")):
            flush()
        if any(a <= start < b for a, b in books):
            flush()
        elif flag in ("nr", "nrfg") and cjk:
            flush()
            if _is_name(word):
                out.append((word, "person", start, start + len(word)))
        elif flag == "nrt" and cjk:
            flush()
            out.append((word, "thing", start, start + len(word)))
        elif flag in _RUN_FLAGS and cjk:
            run.append((word, flag, start))
        else:
            flush()
    flush()
    return out


def _entities(text: str, names: Iterable[str] = ()) -> list[Entity]:
    found = _english(text, names)
    if HAS_CJK.search(text):
        found += _chinese(text)
    return sorted(found, key=lambda e: (e[2], -(e[3] - e[2])))


def entities_of(text: str, names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(name, type) of the entities a text names, each once, in order. `names`: people known to be
    people (the speakers). Pure and deterministic: usable on queries as on memories."""
    out: dict[str, tuple[str, str]] = {}
    for name, kind, _, _ in _entities(text, names):
        out.setdefault(name.casefold(), (name, kind))
    return list(out.values())


# --- certain patterns -------------------------------------------------------------------------
_ADV = r"(?:(?:really|also|still|just|always|often|usually|sometimes|actually|currently|now|absolutely|totally|truly|kinda|do|don't|do not|never|didn't|did not)\s+)"
# (what comes before the object, the predicate from the verb, the object's type, what must follow it)
_TYPED: list[tuple[re.Pattern[str], Callable[[str], str], str, re.Pattern[str] | None]] = [
    (re.compile(rf"\bI(?:'m| am|'ve| have)?\s+(?P<adv>{_ADV}{{0,2}}?)(?P<v>live|living|lived|moved|relocated)\s+(?:in|to)\s+(?:the\s+)?", re.I),
     lambda v: "lived in" if v == "lived" else "lives in", "place", None),
    (re.compile(r"\bI(?:'m| am)\s+(?:originally\s+)?from\s+|\bI\s+(?:originally\s+)?come\s+from\s+", re.I), lambda v: "from", "place", None),
    (re.compile(rf"\bI(?:'m| am)?\s+(?P<adv>{_ADV}{{0,2}}?)(?P<v>work|worked|working)\s+(?:at|for)\s+(?:the\s+)?", re.I),
     lambda v: "worked at" if v == "worked" else "works at", "organisation", None),
    (re.compile(rf"\bI\s+(?P<adv>{_ADV}{{0,2}}?)(?P<v>went|visited)\s+(?:to\s+)?(?:(?:a|an|the)\s+)?", re.I),
     lambda v: "went to" if v == "went" else "visited", "thing", None),
    (re.compile(r"我(?:现在|目前|一直|已经)?(?:住在|家在|搬到了?|搬去了?)"), lambda v: "住在", "place", None),
    (re.compile(r"我(?:来自|老家在|老家是)"), lambda v: "来自", "place", None),
    (re.compile(r"我(?:现在|目前|一直)?在"), lambda v: "工作于", "organisation", re.compile("工作|上班|实习")),
]
_LIKES = [(re.compile(rf"\bI\s+(?P<adv>{_ADV}{{0,3}})(?P<v>like|love|enjoy|hate|dislike|adore)s?\s+(?:(?:the|a|an|my|our)\s+)?", re.I), "likes"),
          (re.compile(r"我(?P<adv>[也还就都很非常特别最超级挺真经常总是一直偶尔有时候每天不太是没那么从来并其实]{0,6}?)"
                      r"(?P<v>喜欢|热爱|讨厌|爱)(?:吃|喝|看|听|玩|去)?"), "喜欢")]
_HATE = ("hate", "dislike", "讨厌")
_NEG = re.compile(r"\b(?:don't|do not|never|didn't|did not)\b|不|没", re.I)
_FREQ = re.compile(r"\b(?:really|always|often|usually|sometimes|absolutely|totally|truly)\b|非常|特别|超级|经常|常常|总是|一直|偶尔|有时候?|每天|很|最|超|挺", re.I)
_END = r"(?=\s*(?:[,.!?;:)。，！？；]|$)|\s+(?:but|with|because|so|when|too|very|a lot|so much|now|lately|anymore|more|as|than|at|in|on|for|since|every)\b)"
_PHRASE = re.compile(rf"([a-z][a-z-]+(?:\s+[a-z][a-z-]+)?){_END}")  # one or two words, then the clause ends
_NOT_OBJECT = _FUNCTION | set("it that this them him her you me us those these how when what being doing going seeing getting "
                              "one every each all some any both most many".split())
_KIN = [(re.compile(rf"\bmy\s+(?:(?:best|close|old|little|younger|older|big)\s+)?(?P<v>{_KIN_EN})(?:'s name is)?\s+(?:named\s+|called\s+)?", re.I),
         lambda v: f"{_KIN_NORMAL.get(v, v)} of"),
        (re.compile(rf"我的?(?P<v>{_KIN_ZH})(?:叫|名叫|是)?"), lambda v: v)]
_KIN_NORMAL = {"mom": "mother", "mum": "mother", "dad": "father", "grandma": "grandmother", "grandpa": "grandfather"}


def _plain_object(body: str, pos: int, word_at: dict[int, tuple[str, str]]) -> str:
    """A liked thing that is no named entity: an activity (跑步), a one-character noun (猫), or a
    short English noun phrase that ends the clause ("painting"); else "" (not certain)."""
    token, flag = word_at.get(pos, ("", ""))
    if token in _ACTIVITY_ZH or (flag == "n" and len(token) == 1):
        return token
    phrase = _PHRASE.match(body, pos)
    return phrase.group(1) if phrase and not set(phrase.group(1).split()) & _NOT_OBJECT else ""


def graph_of(text: str, speaker: str, names: Iterable[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """The entities and certain triples of one memory, in TripleItem's shape (without the id).
    A leading "Name: " is the speaker's label, not a mention; "I" is `speaker`."""
    prefix = _PREFIX.match(text)
    known = set(names) | {speaker} | ({prefix.group(1)} if prefix else set())
    body = text[prefix.end():] if prefix else text
    me = speaker or "I"
    found = _entities(body, known)
    at: dict[int, Entity] = {}
    for e in found:
        at.setdefault(e[2], e)  # the longest entity that starts there
    word_at = {s: (w, f) for w, f, s in _posseg(body)} if HAS_CJK.search(body) else {}
    entities: dict[str, dict[str, str]] = {}
    triples: list[dict[str, Any]] = []

    def entity(name: str, kind: str) -> None:  # a cue's type replaces only "thing"
        old = entities.setdefault(name.casefold(), {"name": name, "type": kind})
        if old["type"] == "thing":
            old["type"] = kind

    def triple(subject: str, predicate: str, obj: str, adv: str = "", negated: bool = False) -> None:
        freq = _FREQ.search(adv)
        triples.append({"subject": subject, "predicate": predicate, "object": obj, "negated": negated or bool(_NEG.search(adv)),
                        "frequency": freq.group().lower() if freq else "", "condition": ""})

    for name, kind, _, _ in found:
        entity(name, kind)
    for pattern, said, kind, follow in _TYPED:
        for m in pattern.finditer(body):
            hit = at.get(m.end())
            if hit and (follow is None or follow.match(body, hit[3])):
                entity(hit[0], kind)
                triple(me, said((m.groupdict().get("v") or "").lower()), hit[0], m.groupdict().get("adv") or "")
    for pattern, said in _LIKES:
        for m in pattern.finditer(body):
            hit, hate = at.get(m.end()), m.group("v").lower() in _HATE
            obj = hit[0] if hit and re.match(_END, body[hit[3]:]) else "" if hit else _plain_object(body, m.end(), word_at)
            if obj and not (hate and _NEG.search(m.group("adv"))):  # "don't hate" is no like
                entity(obj, "concept" if obj in _ACTIVITY_ZH or obj.endswith("ing") else "thing")
                triple(me, said, obj, m.group("adv"), hate)
    for pattern, role in _KIN:
        for m in pattern.finditer(body):
            hit, token = at.get(m.end()), word_at.get(m.end(), ("", ""))[0]
            name = hit[0] if hit and (hit[1] == "person" or body[m.end()].isupper()) else token if _is_name(token) else ""
            if name:
                entity(name, "person")
                triple(name, role(m.group("v").lower()), me)
    if any(me in (t["subject"], t["object"]) for t in triples):
        entity(me, "person")
    return {"entities": list(entities.values()), "triples": triples}


@rule("triple_extractor")
def _triple_extractor(inputs: dict[str, Any]) -> dict[str, Any]:
    memories = [m for m in inputs.get("memories") or [] if isinstance(m, dict)]
    names = {str(m.get("speaker") or "") for m in memories} - {""}
    items = [{"id": str(m.get("id") or ""), **graph_of(str(m.get("text") or ""), str(m.get("speaker") or ""), names)}
             for m in memories]
    return {"items": items, "reason": "rules: named entities and certain patterns only (degraded, offline)"}
