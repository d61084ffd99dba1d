"""The write gate: rules that decide a turn before the model is asked (issue 21).

A small local model is slow (6-14 s a write decision on CPU) and stores chitchat, arithmetic
and how-to requests; the offline rules get those right. The gate decides the turns where the
rules are certain and leaves every other one to the model:

    gate(turns, now_iso) -> WriteDecision   certain: "skip", or "store" with the rules' thing/context
                         -> None            not certain: ask the model (or defer the decision)

Its rules are the table `RULES`, read top to bottom; the first row that applies decides, and
its name is the reason ("gate: greeting"). Only the user's turns are read. When the user answers
an assistant's question ("Do you have pets?" / "yes, two"), a short reply may be a personal fact,
so only the rows marked `when_answering` (remember and forget requests) apply there.

A forget request ("忘掉我刚才说的", "forget what I said about Paris", "这个别记") is decided as
"do not store" and no more: deleting what it names belongs to another issue (a delete-by-request
flow), not to the gate. A forget request that also states something personal ("forget Paris,
I'm moving to Rome") is not certain and goes to the model.

Before the rows, `refusals`: what the project's declared categories forbid (`sensitive` / `never_store`
with keywords) is refused on every write path that infers (add(infer=True), observe, a session's
extraction), with the reason in the result's `refused` list.

Pure: no store, no model; the declared categories are passed in. `write_decider.decide_turn` decides when
the rows run.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from .. import text as T
from ..llm.rules.writing import remember_request as _remember_decision  # answered as the write rule answers it
from .results import WriteDecision

Outcome = Literal["skip", "store"]

# --- vocabulary the rules provider lacks (its chitchat list stays as it is) ----------------------
_LAUGHTER = re.compile(r"^(?:[哈呵嘿嘻嘎h]{2,}|(?:ha|he){2,}h?|l+o+l+[ol]*|lmao+|rofl|xd+|233+|笑死(?:我了)?)+$", re.IGNORECASE)
_EXTRA_CHITCHAT = {
    # thanks, praise and reactions
    "太有帮助了", "很有帮助", "非常有帮助", "帮大忙了", "帮了大忙", "太棒了", "太好了", "太好笑了", "好好笑", "太搞笑了", "有意思",
    "that helps", "that helped", "very helpful", "that's helpful", "that was helpful", "so helpful", "so funny", "that's funny",
    "hilarious", "that's hilarious", "good idea", "great idea", "sounds like a good idea", "that sounds like a good idea",
    "that sounds good", "that makes sense", "makes sense", "perfect", "amazing", "love it",
    # acknowledgements with a subject
    "我知道了", "我明白了", "我懂了", "我了解了", "i understand", "i see what you mean", "i get it", "i got it",
}
_FILLER_EN = {"and", "then", "so", "but", "or", "um", "uh", "er", "erm", "well", "like", "anyway", "hmm", "mm", "mhm", "also", "and then", "so what"}
_FILLER_ZH = re.compile(r"^(?:那个|这个|就是|然后|所以|但是|还有|而且|嗯|呃|额|啊|哦|那|这|…|\.)+$")
_ARITHMETIC = re.compile(
    r"^(?:what(?:'s| is)|calculate|compute|计算|算一下|请问)?\s*[\d.\s()]+(?:[-+*/×÷^%xX]\s*[\d.\s()]+)+"
    r"\s*(?:=|等于|是)?\s*(?:几|多少|什么)?\s*[?？=]?$",
    re.IGNORECASE,
)
# Things people say about themselves without "I": a question or request naming them is not impersonal.
# Chinese drops the possessive ("妈妈住院了"); English says "my" (a first person already) or writes a
# parent as a name ("Mom's surgery went fine"), so a lower-case "cats" or "dad joke" is no hint.
_PERSONAL_HINT = re.compile(
    r"妈|爸|母亲|父亲|老婆|老公|妻子|丈夫|女朋友|男朋友|对象|儿子|女儿|孩子|宝宝|家人|爷爷|奶奶|外婆|外公|姐|妹|哥哥|弟弟|猫|狗|宠物"
    r"|医生|生病|过敏|怀孕|手术|老板|同事|工资|生日|搬家|出差|面试"
    r"|\b(?i:sick|allergic|allergy|pregnant|surgery|boss|colleague|birthday|salary|interview)s?\b"
    r"|\b(?:Mom|Mum|Mommy|Dad|Daddy|Grandma|Grandpa|Granny|Nana)\b",
)
# Asking when is not telling when: "哪一年", "what year" hold no event time of the speaker's.
_WHEN_QUESTION = re.compile(r"哪一?年|哪一?天|几月|几号|几点|什么时候|多少年|\b(?:when|what year|what time|which year|how long ago)\b",
                            re.IGNORECASE)
_NOT_PERSONAL_WORDS = re.compile(r"\bUS\b|(?<![\d零一二两三四五六七八九十午晨晚上下])一点儿?(?![钟半多前后左右\d零一二三四五六七八九十])")
# Weather remarks: small talk about the sky, unless the speaker is in it ("it rained on our wedding").
_WEATHER = re.compile(
    r"天气|下雨|下雪|下冰雹|刮风|台风|雾霾|晴天|阴天|好热|真热|太热|好冷|真冷|太冷|降温|升温|出太阳|气温"
    r"|\b(?:weather|rain|raining|rainy|snow|snowing|snowy|sunny|windy|cloudy|foggy|humid|muggy|drizzl\w*|thunderstorms?)\b"
    r"|\b(?:hot|cold|chilly|freezing|warm)\s+(?:out|outside|today|tonight|out there|in here)\b",
    re.IGNORECASE,
)
_PLAN_OR_NEED = re.compile(r"得|要|该|需要|带伞|取消|推迟|航班|\b(?:flight|cancel\w*|delay\w*|should|need|have to|must)\b", re.IGNORECASE)
_LETS_TALK = re.compile(r"^(?:我们)?(?:来)?(?:聊聊|聊一聊|说说|谈谈)|^let'?s\s+(?:talk|chat)\s+about\b", re.IGNORECASE)
# "I wonder how tall Everest is", "我想知道光速是多少": a question put as a statement of curiosity.
_WONDER = re.compile(r"^(?:i\s+wonder|i'?m\s+curious|i\s+was\s+wondering|do\s+you\s+know|我想知道|我很好奇|我好奇|你知道)\s*", re.IGNORECASE)
# Forget (or do-not-keep) requests, at the start of a clause; "don't forget" and "别忘了" are remember requests.
_FORGET = T.FORGET  # one forget-request rule for the gate, the write rules and the monitor (text.py)
# Requests for content (a poem, a translation, a joke), with the words that say who it is for.
_REQUEST_PREFIX = re.compile(
    r"^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:help me\s+(?:to\s+)?)?(?:请你?|麻烦你?|能不能|可以)?(?:帮我|给我|为我|替我)?",
    re.IGNORECASE,
)
_REQUEST_VERB = re.compile(
    r"^(?:write|translate|tell|explain|summari[sz]e|list|generate|compose|define|describe|calculate|compute|convert"
    r"|rewrite|rephrase|paraphrase|proofread|correct|solve|give|suggest|recommend|name|brainstorm|draft|create|make|come up with)\b"
    r"(?!\s*[:：])"  # "Name: Li Wei, age 32" is a form the user fills in, not a request
    r"|^(?:用[A-Za-z0-9+#.\u4e00-\u9fff]{1,12}?)?(?:写|翻译|讲|解释|总结|概括|列出|列举|生成|计算|算一下|润色|改写|转换|编|实现|推荐|出几道|出一道)"
    r"|^给.{1,12}?(?:起|取|想|写|编|配)"
    r"|^把.{1,40}(?:翻译|改写|润色|总结|转换|换成|改成|改得|改一下|修改|精简|缩短|扩写)",
    re.IGNORECASE,
)
_FOR_ME = re.compile(r"帮我|给我|为我|替我|\b(?:tell|give|show|write|help|for|explain to)\s+me\b|\bme\s+(?:a|an|the|some)\b", re.IGNORECASE)
# Text operations work on the material after a colon or in quotes, which says nothing about the speaker.
_TEXT_OP = re.compile(
    r"\b(?:translate|rewrite|rephrase|paraphrase|proofread|correct|convert)\b|\bmake (?:this|it|that)\b.{0,40}\bsound\b"
    r"|翻译|改写|润色|转换|换成|改成|改得|改一下|修改|精简|缩短|扩写",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[:：].*$|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|“[^”]*”|‘[^’]*’|「[^」]*」|《[^》]*》", re.DOTALL)


@dataclass(frozen=True)
class Turn:
    """What the rules read, worked out once per turn."""

    text: str  # the user's words
    parts: list[str]  # their clauses (rules provider's splitting)
    answering: bool  # the user replies to an assistant's question
    now: str


@dataclass(frozen=True)
class GateRule:
    name: str  # the reason: "gate: <name>"
    outcome: Outcome
    applies: Callable[[Turn], bool]
    when_answering: bool = False  # also decides a reply to an assistant's question
    note: str = ""  # added to the reason


# --- the rows' tests ---------------------------------------------------------------------------------
def _key(clause: str) -> str:
    key = unicodedata.normalize("NFKC", clause).lower().strip(" .!?~…。！？,，'\"")
    return re.sub(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]", "", key).strip()


def _is_laughter(clause: str) -> bool:
    return bool(_LAUGHTER.match(_key(clause).replace(" ", "")))


def _small_talk(clause: str) -> bool:
    return T.is_chitchat(clause) or _is_laughter(clause) or _key(clause) in _EXTRA_CHITCHAT


def _filler(clause: str) -> bool:
    key = _key(clause)
    return not key or key in _FILLER_EN or all(w in _FILLER_EN for w in key.split()) or bool(_FILLER_ZH.match(key))


def _personal(clause: str) -> bool:
    return T.is_personal_fact(clause) or T.is_personal_event(clause) or T.is_experience(clause)


def _impersonal(text: str) -> bool:
    """Nothing about the speaker: no first person, no time word (an event), no family, pet, health or work word.
    "US" in capitals is the country and "礼貌一点" is "a bit more polite", not one o'clock."""
    text = _NOT_PERSONAL_WORDS.sub(" ", text)
    return not (T.has_first_person(text) or T.has_time_word(_WHEN_QUESTION.sub(" ", text)) or _PERSONAL_HINT.search(text))


def forget_request(t: Turn) -> bool:
    asks = [c for c in t.parts if _FORGET.search(c)]
    return bool(asks) and not any(_personal(c) for c in t.parts if c not in asks)


def remember_request(t: Turn) -> bool:
    decision = _remember_decision(t.text, t.now)
    return bool(decision and decision["write_episodic"])  # one that names nothing ("记住这个") goes to the model


def laughter(t: Turn) -> bool:
    return all(_is_laughter(c) for c in t.parts)


def greeting(t: Turn) -> bool:
    """Greetings, thanks, acknowledgements and reactions, laughter among them."""
    return all(_small_talk(c) for c in t.parts)


def fragment(t: Turn) -> bool:
    rest = [c for c in t.parts if not _small_talk(c)]
    if all(_filler(c) for c in rest):
        return True
    text = " ".join(rest)
    return not T.substantial(text) and not re.search(r"\d", text) and _impersonal(text)


def arithmetic(t: Turn) -> bool:
    return len(t.parts) == 1 and bool(_ARITHMETIC.match(t.text.strip()))


def _asked(clause: str) -> str:
    """The question inside "I wonder how tall Everest is" / "我想知道…"; other clauses as they are."""
    inner = _WONDER.sub("", clause.strip(), count=1)
    return inner if inner != clause.strip() and inner else clause


def knowledge_question(t: Turn) -> bool:
    rest = [_asked(c) for c in t.parts if not _small_talk(c)]
    return bool(rest) and all(T.is_question(c) for c in rest) and _impersonal(" ".join(rest))


def weather_remark(t: Turn) -> bool:
    """"今天天气真不错", "It's so hot out there today", "我们来聊聊今天的天气吧": the weather and small
    talk, nobody's plans or family in it (a time word is allowed: weather is always today)."""
    rest = [_LETS_TALK.sub("", c.strip(), count=1) for c in t.parts if not _small_talk(c)]
    if not rest or not all(_WEATHER.search(c) for c in rest):
        return False
    text = " ".join(rest)
    return not (T.has_first_person(text) or _PERSONAL_HINT.search(text) or _PLAN_OR_NEED.search(text))


def content_request(t: Turn) -> bool:
    """"Write a haiku about the sea", "帮我写一首诗", "把这句话翻译成英文：…": "帮我"/"tell me" say who it
    is for; for a text operation (translate, proofread) the material after a colon or in quotes is what to
    work on, not about the speaker ("帮我写一封邮件：我下周请假" keeps its material and goes to the model)."""
    body = (_QUOTED.sub(" ", t.text) if _TEXT_OP.search(t.text) else t.text).strip()
    head = _REQUEST_PREFIX.sub("", body, count=1).strip()
    if not _REQUEST_VERB.search(head):
        return False
    rest = _FOR_ME.sub(" ", body)
    return _impersonal(rest) and not any(_personal(c) for c in T.clauses(rest))


RULES: tuple[GateRule, ...] = (
    GateRule("forget request", "skip", forget_request, when_answering=True,
             note="not stored; deleting what it names is not done here"),
    GateRule("remember request", "store", remember_request, when_answering=True),
    GateRule("laughter", "skip", laughter),
    GateRule("greeting", "skip", greeting),
    GateRule("fragment", "skip", fragment),
    GateRule("arithmetic", "skip", arithmetic),
    GateRule("knowledge question", "skip", knowledge_question),
    GateRule("content request", "skip", content_request),
    GateRule("weather remark", "skip", weather_remark),
)


# --- the project's instructions (MemoryConfig.categories; docs/categories.md) ----------------------------
def refusals(text: str, categories: Sequence[Any]) -> list[str]:
    """Why the project's declared categories forbid storing `text`, or [] when none does: a category marked
    `sensitive` or `never_store` whose keywords (or a whole example) the text holds. Certain as far as the
    operator's words are, so it runs before the other rows and before any model, whatever `llm_gate` says;
    a turn that holds one is refused whole (a clause split could leave the rest of a diagnosis behind)."""
    from ..lifecycle.categories import first_match

    found = first_match(text, categories, refused=True) if categories and text.strip() else None
    if found is None:
        return []
    spec, word = found
    return [f"instructions: {spec.name} is never stored (it says {word!r})"]


def refused_turn(turns: Sequence[dict[str, Any]], categories: Sequence[Any]) -> list[str]:
    """`refusals` of what the user said in these turns (every turn when none is the user's)."""
    turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
    said = T.user_lines(turns) or " ".join(t["content"] for t in turns)
    return refusals(said, categories)


def read_turn(turns: Sequence[dict[str, Any]], now_iso: str = "") -> Turn:
    turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
    text = T.user_lines(turns)
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=0)
    answering = any(t["role"] == "assistant" and T.is_question(t["content"].strip()) for t in turns[:last_user] if t["content"].strip())
    return Turn(text=text, parts=T.clauses(text), answering=answering, now=now_iso)


def gate_rule(turns: Sequence[dict[str, Any]], now_iso: str = "") -> GateRule | None:
    """The row that decides these turns, or None when none is certain."""
    turn = read_turn(turns, now_iso)
    if not turn.parts:
        return None  # nothing the user said (an assistant's turn alone): the model judges it
    for row in RULES:
        if (row.when_answering or not turn.answering) and row.applies(turn):
            return row
    return None


def gate(turns: Sequence[dict[str, Any]], now_iso: str = "") -> WriteDecision | None:
    """A certain decision for these turns, or None: ask the model."""
    row = gate_rule(turns, now_iso)
    if row is None:
        return None
    reason = f"gate: {row.name}" + (f" ({row.note})" if row.note else "")
    if row.outcome == "skip":
        return WriteDecision(write_episodic=False, reason=reason)
    decided = _remember_decision(T.user_lines(list(turns)), now_iso) or {}
    return WriteDecision.model_validate({**decided, "reason": reason})
