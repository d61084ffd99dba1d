"""Statements with a subject and a slot (issue 55): who a sentence is about, which attribute it fills and with
what value, and the value it takes back ("My name is Sean, not Shawn", "我不在德勤了", "I moved from Portland to
Denver"). Pure and language-neutral: the patterns are data (slot_rules.py), the vocabulary and the policy one
table (slot_tables.py), values compared in one canonical form (case, numbers, a bilingual gazetteer), so that
"not Nanjing anymore" takes back "我们家在南京鼓楼区".

Why a reader of its own: a correction has to find what it corrects by meaning, not by words shared with the
old memory; (subject, attribute) is that meaning, and it is the same in any wording or language. The reader
is deliberately narrow: it speaks only where a pattern states a slot, and a clause that is a question, a plan
or a trip states none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from . import clauses, is_question
from .lazy import lazy_compile
from .slot_rules import IMPERSONAL, RULES, VALUES
from .slot_tables import ATTRIBUTES, GAZETTEER, PETS, RELATIONS
from .slot_values import canonical, kind_of, same_value

KEY = "statements"  # where a record keeps its statements (its metadata: no schema change)


class Statement(BaseModel):
    """One slot a text fills. `value` and `old` are canonical (slots.canonical); `old` is the value the text
    takes back, `value` None when it only takes one back ("I'm not at Deloitte anymore"); `said` the words."""

    model_config = ConfigDict(frozen=True)

    subject: str = "user"
    attribute: str
    value: str | None = None
    old: str | None = None
    said: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return self.subject, self.attribute


_LEAD = lazy_compile(r"^\s*(?:(?:actually|well|sorry|oh|oops|so|and|but|update|correction|wait|no|btw|by the way|ok|okay|"
                     r"also|anyway|hey|um|uh|fyi|just so you know|quick update)\b[\s,:-]*)+"
                     r"|^\s*(?:(?:其实|另外|对了|还有|而且|然后|不过|不好意思|抱歉|更正一下|纠正一下|更正|纠正|说错了|哦|嗯)[，,\s]*)+",
                     re.IGNORECASE)
_SKIP = lazy_compile(r"\b(?:if|might|maybe|perhaps|thinking (?:about|of)|plan(?:s|ning)? to|going to|gonna|want to|wants to|"
                     r"would like to|'d like to|hope to|considering|could|should|will|'ll|next (?:month|year|week)|someday|"
                     r"dream|wish|used to|when i was)\b|如果|假如|要是|可能|也许|打算|计划|准备|想要?|考虑|将要|明年|下个月|曾经|小时候",
                     re.IGNORECASE)
_TRIP = lazy_compile(r"\b(?:trip|visit(?:ing|ed)?|vacation|holiday|conference|business trip|stay(?:ed|ing)|hotel|for the weekend)\b"
                     r"|出差|旅游|旅行|度假|玩|开会|酒店|民宿|客栈|宾馆|旅馆|住了[一两三四五六七八九几\d]+晚", re.IGNORECASE)
_NEG = lazy_compile(r"\b(?:no longer|not|never|no more)\s+|\b(?:don't|doesn't|do not|does not|didn't|did not)\s+|n't\s+"
                    r"|\s*\b(?:anymore|any more|any longer)\b"
                    r"|(?:已经|现在|其实)?(?:不再|不)(?=住|在|叫|是|吃|做|开|上|当|用|对|养|喝|抽)|没有?(?=住在|在)", re.IGNORECASE)
_BARE_EN = lazy_compile(r"^(?:(?:i'm|i am|we're|we are|it's|it is|that's|its|i|we|he's|she's)\s+)?(?:not|no longer)\s+"
                        r"(?:(?P<prep>at|in|with|for|called|named|living in|working at|based in)\s+)?(?P<old>[^,.;!?]+?)"
                        r"(?:\s+(?:anymore|any more|any longer|now))?$", re.IGNORECASE)
_BARE_ZH = lazy_compile(r"^(?:我们?|其实|现在)?(?:已经)?(?P<prep>不是|不叫|不在|并非|不住在?)(?P<old>[^，,。]+?)(?:了)?$")
_NOT_MID = lazy_compile(r"(?<=[\w\d$%])\s+(not|rather than|instead of)\s+(?=\S)", re.IGNORECASE)
_NOT_AFTER = frozenset({"am", "is", "are", "was", "were", "do", "does", "did", "i'm", "it's", "he's", "she's", "we're", "they're",
                        "i", "we", "it", "he", "she", "they", "have", "has", "would", "could", "should", "will", "can", "may",
                        "must", "why", "or", "and", "but", "if", "that", "so", "me", "still", "just", "probably", "definitely"})
_ZH_NOT = lazy_compile(r"(?<=[^\s我也还都就可并又，,。不])(?=不是|不叫|而不是)")
_ZH_NOT_BUT = lazy_compile(r"不是(?P<old>[^，,。]+?)[，,]?而是(?P<new>[^，,。]+)")
_EN_NOT_BUT = lazy_compile(r"\bnot (?P<old>[^,.;]+?),? but (?P<new>[^,.;]+)", re.IGNORECASE)
_OTHER = lazy_compile(r"\b(?:he|she|they|his|her|their|he's|she's|they're|him|them)\b|他|她", re.IGNORECASE)
_USER = lazy_compile(r"\b(?:i|i'm|i've|i'd|i am|me|my|we|we're|we've|our|us|the user|user)\b|我|咱|用户", re.IGNORECASE)
_IMPERSONAL = lazy_compile(IMPERSONAL, re.IGNORECASE)  # slot_rules.py: "The rent in Paris is 2000"
_NAMED = lazy_compile(r"^(?P<name>[A-Z][a-z]+)(?:'s)?\s+(?:lives|works|is|moved|just|has|got|turned|drives|earns|makes)\b")
# A pet brought in by what it is, its name in the same or the next clause: "家里养了一只橘猫，叫大橘",
# "我表姐养了一只英短，叫年糕" (the cousin's pet); that clause and the next are the pet's, not the user's.
_KEEPS = lazy_compile(r"养了?(?:一|两|几)?(?:只|条|头)(?P<animal>[\u4e00-\u9fffA-Za-z]{1,6}?)(?=$|[，,。\s]|叫|名叫)")
# "X(家)?的狗": the pet of someone else ("我邻居家的狗叫小黑").
_WHOSE_PET = lazy_compile(r"(?:家)?的?(?P<pet>狗狗|小狗|狗|猫咪|小猫|猫|\s*(?:dog|cat|puppy|kitten)\b)", re.IGNORECASE)
# A move in the past, dated by an age or a year: "moved to New York at 22", "in 2015", "22岁搬到北京" (no current home).
_PAST_MOVE = lazy_compile(r"\b(?:at (?:age |the age of )?\d{1,2}\b|in (?:19|20)\d\d\b|back in\b|when (?:i|we) (?:was|were)\b"
                          r"|(?:\d+|a few|several|many) years ago\b|as a (?:kid|child|teen|teenager|student)\b)"
                          r"|\d{1,2}岁(?:的时候|那年|时)?(?:就|才)?搬|(?:19|20)\d\d年(?:的时候|时)?(?:就|才)?搬|(?:那年|当年|几年前|小时候)", re.IGNORECASE)
# Before a bare "叫Y", what makes Y the user's own name: the first person, or nothing at all (an elided "我").
_MY_NAME = lazy_compile(r"(?:^|我|我们|本人)(?:就|现在|其实|也|还|的)?(?:真名|大名|全名|中文名|英文名|小名|网名|名字)?\s*$")


@functools.cache
def _relations() -> tuple[Any, Any]:
    en = "|".join(sorted((w for ws in RELATIONS.values() for w in ws if w.isascii()), key=len, reverse=True))
    zh = "|".join(sorted((w for ws in RELATIONS.values() for w in ws if not w.isascii()), key=len, reverse=True))
    return (re.compile(rf"\b(?:my|our|the user's|user's)\s+(?:(?:little|older|younger|big|elder|baby|new|old|best)\s+)?(?P<rel>{en})\b",
                       re.IGNORECASE),
            re.compile(rf"(?:我|我们|用户)(?:的|家的?)?(?:新|前|老|现任|现在的|以前的)?(?P<rel>{zh})"))


@functools.cache
def _rules() -> list[tuple[str, re.Pattern[str], str | None]]:
    """RULES compiled: placeholders filled from VALUES, `@city`/`@company` from the gazetteer's spellings."""
    def kind(k: str) -> str:
        return "|".join(sorted((a for _, (t, al) in GAZETTEER.items() if t == k for a in al), key=len, reverse=True))

    out = []
    for attribute, pattern, fixed in RULES:
        pattern = pattern.replace("{{", "\0").replace("}}", "\1")
        pattern = re.sub(r"\{([A-Z]+)\}", lambda m: VALUES[m[1]], pattern).replace("\0", "{").replace("\1", "}")
        pattern = pattern.replace("@city", f"(?:{kind('city')})").replace("@company", f"(?:{kind('company')})")
        out.append((attribute, re.compile(pattern), fixed))
    return out


def _subject(clause: str) -> str | None:
    """Who the clause is about, the earliest mention winning (a relation over a bare "my" at the same place):
    "user", a relation ("husband", "dog"), a named person ("ana"), "other" (he, she), or None (none named)."""
    en, zh = _relations()
    found: list[tuple[int, int, str]] = []
    for pattern in (en, zh):
        m = pattern.search(clause)
        if m:
            rel = m["rel"].lower()
            who = next(k for k, ws in RELATIONS.items() if rel in (w.lower() for w in ws))
            pet = _WHOSE_PET.match(clause, m.end()) if who not in PETS else None
            if pet:  # "我邻居家的狗": the neighbour's dog, not the neighbour
                who = f"{who}'s {_pet_kind(pet['pet'])}"
            found.append((m.start(), 0, who))
    m = _NAMED.match(clause)
    if m and m["name"].lower() not in {"i", "my", "we", "our", "he", "she", "they", "it", "this", "that", "the", "there"}:
        found.append((0, 1, m["name"].lower()))
    for pattern, who in ((_OTHER, "other"), (_USER, "user")):
        m = pattern.search(clause)
        if m:
            found.append((m.start(), 2, who))
    return min(found)[2] if found else None


def past_move(clause: str) -> bool:
    """Whether a clause tells of a move in the past, dated by an age or a year ("moved to New York at 22",
    "I moved to Seattle in 2015", "我22岁搬到了北京"): it names no current home (nor a current age)."""
    return bool(_PAST_MOVE.search(clause))


def _pet_kind(word: str) -> str:
    word = word.strip().lower()
    return next((k for k in PETS if word in (w.lower() for w in RELATIONS[k]) or RELATIONS[k][-1] in word), "pet")


def _with_pet(clause: str, own: str | None) -> str | None:
    """The subject of a clause that brings a pet in ("养了一只橘猫"): the pet (the user's), or "cousin's pet"."""
    m = _KEEPS.search(clause)
    if not m:
        return own
    pet = _pet_kind(m["animal"])
    return pet if own in (None, "user") or own in PETS else f"{own}'s {pet}"


def _prepare(text: str) -> str:
    """The wordings of "X, not Y" made one: "不是Y而是X" -> "是X，不是Y", "not Y but X" -> "X, not Y", "X not Y" -> "X, not Y"."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # "$120,000" is one figure, not two clauses
    text = _ZH_NOT_BUT.sub(lambda m: f"是{m['new']}，不是{m['old']}", text)
    text = _EN_NOT_BUT.sub(lambda m: f"{m['new']}, not {m['old']}", text)

    def comma(m: re.Match[str]) -> str:
        before = text[: m.start()].split()
        return m.group(0) if before and before[-1].lower().strip(",") in _NOT_AFTER else f", {m[1]} "

    text = _NOT_MID.sub(comma, text)
    return _ZH_NOT.sub("，", text)


def _clause_statements(clause: str, subject: str) -> list[Statement]:
    """The statements one clause makes (a negated clause takes its values back)."""
    negated = bool(_NEG.search(clause))
    body = _NEG.sub(" ", clause).strip() if negated else clause
    out: dict[tuple[str, str], Statement] = {}
    aliases: list[tuple[int, int]] = []  # where a name of a kind was read: no plain name there
    for attribute, pattern, fixed in _rules():
        for m in pattern.finditer(body):
            if attribute == "alias":
                aliases.append(m.span())
            elif attribute == "name" and any(a < m.end() and m.start() < b for a, b in aliases):
                continue
            groups = m.groupdict()
            who = subject
            if groups.get("subj"):
                pet = next(k for k, ws in RELATIONS.items() if groups["subj"].lower() in (w.lower() for w in ws))
                mine = re.match(r"(?i)(?:my|our|the user's|我|用户)", m.group(0))
                who = pet if mine or subject in (None, "user") or subject in PETS else f"{subject}'s {pet}"
            elif attribute == "name" and who == "user" and not re.match(r"(?i:my name|name|call me|i|我|名字)", m.group(0)) \
                    and not _MY_NAME.search(body[: m.start()]):
                continue  # "他的狗叫小黑", "家里的猫叫大橘": a bare 叫 after someone else names no user
            if ATTRIBUTES[attribute].user_only and (who == "user" or who in RELATIONS or who in PETS or _USER.search(clause)):
                who = "user"  # "my landlord raised the rent": the user's; "他的房租是5000" stays his
            value = canonical(fixed if fixed is not None else groups.get("v"), attribute)
            old = canonical(groups.get("old"), attribute)
            if not _plausible(attribute, value) or (old is not None and not _plausible(attribute, old)):
                continue
            if negated and who not in PETS and value is not None and old is None:
                value, old = None, value
            if (who, attribute) not in out and (value or old):
                out[(who, attribute)] = Statement(subject=who, attribute=attribute, value=value, old=old, said=clause if negated else m.group(0).strip())
    if "home" in {a for _, a in out} and _TRIP.search(clause):
        out = {k: s for k, s in out.items() if k[1] != "home"}
    if _PAST_MOVE.search(clause):  # "moved to New York at 22", "22岁搬到了北京": then, not now (no home, no age)
        out = {k: s for k, s in out.items() if k[1] not in ("home", "age")}
    return list(out.values())


def _plausible(attribute: str, value: str | None) -> bool:
    """A value the attribute can hold: an age of 1-120, a home that is no company, an employer that is no city."""
    if value is None:
        return True
    kind = kind_of(value)
    if attribute == "age":
        return value.isdigit() and 0 < int(value) <= 120
    return not ((attribute == "home" and kind == "company") or (attribute == "employer" and kind == "city"))


def _bare(clause: str) -> tuple[str | None, str]:
    """(the value a bare negation takes back, the attribute its wording names or "") for "not Shawn",
    "not at Deloitte anymore", "不叫王晓雨"; (None, "") for any other clause."""
    m = _BARE_EN.match(clause) or _BARE_ZH.match(clause)
    if not m:
        return None, ""
    prep = (m["prep"] or "").lower()
    hint = {"at": "employer", "with": "employer", "for": "employer", "working at": "employer", "in": "home", "living in": "home",
            "based in": "home", "不在": "", "不住": "home", "不住在": "home", "called": "name", "named": "name", "不叫": "name"}.get(prep, "")
    raw = m["old"].strip()
    kind = kind_of(canonical(raw))
    hint = {"city": "home", "company": "employer"}.get(kind, hint)
    if not hint and len(raw.split()) > 3:
        return None, ""
    return raw, hint


def read(text: str) -> list[Statement]:
    """Every statement `text` makes, in order; a bare negation ("not Shawn", "不是王晓雨") is the old value of the
    statement beside it of the same kind, or a statement of its own when its wording or the gazetteer names
    the attribute ("not Nanjing anymore": home). Questions, plans and trips state nothing."""
    return [s for _, found in read_clauses(text) for s in found]


def read_clauses(text: str) -> list[tuple[str, list[Statement]]]:
    """(clause, its statements) for each clause of `text`; read() flattened."""
    out: list[tuple[str, list[Statement]]] = []
    bare: list[tuple[int, str, str]] = []
    subject: str | None = "user"  # a clause with no subject goes on with the last one named: "Moved to Denver." is the user's
    for clause in clauses(_prepare(text or "")):
        body = _LEAD.sub("", clause).strip()
        if not body or is_question(body) or _SKIP.search(body):
            out.append((clause, []))
            continue
        own = _with_pet(body, _subject(body))
        general = _IMPERSONAL.search(body)
        if own is None and general and (not general["place"] or kind_of(canonical(general["place"])) == "city"):
            subject = None  # about a place or things in general, and so is a bare figure after it
        subject = own or subject
        if subject is None:
            out.append((clause, []))
            continue
        found = _clause_statements(body, subject)
        if not found:
            raw, hint = _bare(body)
            if raw is not None:
                bare.append((len(out), raw, hint))
        out.append((clause, found))
    for at, raw, hint in bare:
        _attach(out, at, raw, hint)
    return _merged(out)


def _merged(out: list[tuple[str, list[Statement]]]) -> list[tuple[str, list[Statement]]]:
    """A take-back alone ("不叫王晓雨") joins the turn's new value of the same slot ("我叫王晓宇")."""
    given = {s.key: (i, j) for i, (_, found) in enumerate(out) for j, s in enumerate(found) if s.value is not None and s.old is None}
    for i, (clause, found) in enumerate(out):
        for s in [s for s in found if s.value is None and _given_key(s, given) in given]:
            gi, gj = given.pop(_given_key(s, given))
            out[gi][1][gj] = out[gi][1][gj].model_copy(update={"old": s.old})
            out[i] = (clause, [x for x in out[i][1] if x is not s])
    return out


def _given_key(s: Statement, given: dict[tuple[str, str], tuple[int, int]]) -> tuple[str, str]:
    """The slot a take-back joins: its own, or a name of a kind given in the turn ("英文名叫Fanny，不叫Fiona")."""
    alias = (s.subject, "alias")
    return alias if s.attribute == "name" and s.key not in given and alias in given else s.key


def _attach(out: list[tuple[str, list[Statement]]], at: int, raw: str, hint: str) -> None:
    """A bare negation's value joins the nearest statement of its kind (before it first), else stands alone."""
    order = [*range(at - 1, -1, -1), *range(at + 1, len(out))]
    for i in order:
        for j, s in enumerate(out[i][1]):
            old = canonical(raw, s.attribute)
            fits = s.attribute == hint if hint else (kind_of(old) == "number") == (kind_of(s.value) == "number")
            if fits and s.old is None and s.value is not None and not same_value(old, s.value) and _plausible(s.attribute, old):
                out[i][1][j] = s.model_copy(update={"old": old})
                return
    if hint:
        out[at] = (out[at][0], [Statement(attribute=hint, old=canonical(raw, hint), said=out[at][0])])


def corrects(new: Statement, old: Statement) -> bool:
    """Whether `new` makes `old` untrue: the same subject and slot (a bare figure fills any money slot), and the
    old value taken back by name, or another value given for a single-valued slot."""
    if new.subject != old.subject or old.value is None or old.subject == "other":
        return False  # "other" is whoever "he" or "she" was: two of them need not be one person
    policy = ATTRIBUTES.get(old.attribute)
    if policy is None or not (new.attribute == old.attribute or (new.attribute == "amount" and policy.money)):
        return False
    if new.old is not None and same_value(new.old, old.value):
        return True
    return policy.single and new.value is not None and not same_value(new.value, old.value)


def corrected(old: Iterable[Statement], new: Iterable[Statement]) -> list[tuple[Statement, Statement]]:
    """(old statement, the new one that corrects it) for every pair that corrects(), unless the new value is one
    the old text also gives that slot ("从成都搬到了上海，现在住在徐汇区" is not corrected by "I live in Shanghai")."""
    new, old = list(new), list(old)
    return [(o, n) for o in old for n in new if corrects(n, o)
            and not any(x.key == o.key and same_value(n.value, x.value) for x in old)]


def rest_of(text: str, keys: set[tuple[str, str]]) -> str:
    """What `text` says beyond the slots `keys` (a correction took them): its other clauses, and within a clause
    that held a corrected slot the words of its statements about someone else ("I live in Portland with my dog
    Biscuit", the user's home corrected: "my dog Biscuit"); "" when nothing is left. Why not the user's other
    slots of that clause: they lean on the corrected one ("I work at Ledgerly as a product manager": the job was
    at Ledgerly), so they go with it."""
    parts: list[str] = []
    subjects = {who for who, _ in keys}
    for clause, found in read_clauses(text):
        if not any(s.key in keys for s in found):
            parts.append(clause)
        else:
            parts += [s.said for s in found if s.subject not in subjects and s.value is not None]
    return ("，" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else ", ").join(p for p in parts if p.strip())


def from_model(statements: Iterable[Any]) -> list[Statement]:
    """A model's statements (processors/results.SlotStatement or dicts) held to the reader's schema: a known
    attribute, a value or an old value, both canonical; anything else is dropped."""
    out = []
    for s in statements:
        data = s if isinstance(s, dict) else s.model_dump()
        attribute = str(data.get("attribute") or "").strip().lower().replace(" ", "_").replace("-", "_")
        if attribute not in ATTRIBUTES:
            continue
        subject = "user" if ATTRIBUTES[attribute].user_only else str(data.get("subject") or "user").strip().lower() or "user"
        value, old = canonical(_text(data.get("value")), attribute), canonical(_text(data.get("old")), attribute)
        if (value or old) and _plausible(attribute, value):
            out.append(Statement(subject=subject, attribute=attribute, value=value or None, old=old or None))
    return out


def merged(given: list[Statement], text: str) -> list[Statement]:
    """`given` (a model's), then the rules' reading of `text` for each slot the model left out."""
    keys = {s.key for s in given}
    return [*given, *(s for s in read(text) if s.key not in keys)]


def _text(value: Any) -> str | None:
    return None if value is None or str(value).strip() == "" else str(value)


def stored(statements: Iterable[Statement]) -> list[dict[str, Any]]:
    """The statements as a record keeps them (metadata[KEY])."""
    return [s.model_dump(exclude_none=True, exclude={"said"} if not s.said else None) for s in statements]


def of_record(metadata: dict[str, Any], text: str) -> list[Statement]:
    """A record's statements: those it keeps while their words are still in its text (a model may have written
    them), else read from the text (a memory written before slots, or its text rewritten since)."""
    kept = metadata.get(KEY)
    if isinstance(kept, list):
        try:
            statements = [Statement.model_validate(s) for s in kept]
        except ValueError:
            statements = []
        prepared = _prepare(text)
        if statements and all(s.said in text or s.said in prepared for s in statements):  # a model's have no words: kept
            return statements
    return read(text)
