"""Offline rules for the online processors: WriteDecider, Reconsolidator, SemanticWriter.

A deterministic, honestly degraded mode: keyword and pattern rules in Chinese and
English, no understanding. Text is cut into clauses (at punctuation); a clause that
is a question never counts as a statement about the user, so "What should I eat
today?" is not a memory while "我下周要面试，怎么准备？" is.

- write_decider: when unsure, keep. A remember-phrase (记住/别忘了/remember/don't forget/note
  that) with some content is always stored; so are first-person facts (我是/我叫/我喜欢/my name
  is/I live...), first-person clauses with a time word (昨天我.../I ... tomorrow) and experiences
  told without "I" as the subject (医生给我开了药, back from Kyoto). Greetings, laughter, fragments,
  arithmetic, knowledge questions, requests for content, weather talk and remarks about the
  conversation (text/turns.py) are not; nor is a turn of questions, reactions and remarks alone.
  Any other statement is kept ("My shoe size is 43.", "家里的空调又坏了"). The episode is the whole turn.
- reconsolidator: when the conversation mentions the memory's key words and says
  something new about them, the new clauses are appended to the memory as an update.
- semantic_writer: first-person clauses with a stable-fact pattern (name, job, home,
  family, pets, likes, allergies, diet...), no date and no plan become facts in the
  third person, minus those already known (normalised comparison).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from ...text import (
    TIME_WORD,
    clauses,
    forget_clauses,
    has_cjk,
    is_chitchat,
    is_experience,
    is_personal_event,
    is_personal_fact,
    is_question,
    key_terms,
    normalise_fact,
    substantial,
    user_lines,
)
from ...text.dates import event_time_iso
from ...text.owners import other_owner
from ...text.requests import prefers
from ...text.turns import (
    REMEMBER,
    arithmetic,
    asks_to_remember,
    assistant_request,
    content_request,
    conversation_remark,
    fragment,
    greeting,
    knowledge_question,
    laughter,
    reaction,
    read_turn,
    remark,
    weather_remark,
)
from . import rule
from .lifecycle import slots

# --- write decider vocabulary -------------------------------------------------------------
_REMIND = re.compile(r"\bremind me\b|提醒我", re.IGNORECASE)
_HABITUAL = re.compile(r"每|周末|平时|经常|通常|一般|总是|\b(?:every|usually|always|often|on weekends|weekends)\b", re.IGNORECASE)
# A plan is an episode (it may change), not a stable fact.
_PLAN = re.compile(r"打算|计划|准备|决定|想去|要去|将要|即将|\b(?:planning|plan to|going to|intend to|hope to|about to|moving to)\b", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"今天|昨天|前天|明天|后天|今晚|昨晚|刚才|刚刚|此刻|这会儿|正在|\b(?:today|tonight|yesterday|tomorrow|right now|now|just|at the moment|this morning|this afternoon)\b",
    re.IGNORECASE,
)


def _event_time(now: str, text: str) -> str:
    """The day the text names ("tomorrow", "下周二"), resolved from `now` (when the turn was said, in the
    user's zone as its offset says): the one rule of lifecycle/when.py."""
    try:
        base = datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if base.tzinfo is None:
        base = base.replace(tzinfo=timezone.utc)
    return event_time_iso(text, int(base.timestamp()), base.tzinfo)  # type: ignore[arg-type]


# --- write decider ----------------------------------------------------------------------------
def decide(turns: list[dict[str, Any]], now: str = "") -> dict[str, Any]:
    """The offline write decision for these turns (only the user's turns are read)."""
    text = user_lines(turns)
    no = {"write_episodic": False, "context": "", "thing": "", "time": "", "who": ""}
    parts = clauses(text)
    if not parts or all(is_chitchat(c) for c in parts):
        return {**no, "reason": "rules: greeting or small talk"}
    asks, rest = forget_clauses(text)
    if asks:  # a forget request is never a memory; what else the turn says is decided on its own
        if not any(c.strip() and not is_chitchat(c) for c in rest):
            return {**no, "reason": "rules: forget request (not stored)"}
        text = " ".join(rest)
        parts = clauses(text)
    zh = has_cjk(text)
    remembered = remember_request(text, now)
    if remembered is not None:
        return remembered
    if prefers(parts):  # "stop giving me Windows shortcuts? I'm on a Mac": kept whole
        return _yes(" ".join(text.split()), "偏好" if zh else "a preference", now, text, "rules: a request that states a preference")
    if _REMIND.search(text) and substantial(text):  # a reminder is a todo: kept whole, so it reads as one
        return _yes(" ".join(text.split()), "提醒" if zh else "a reminder", now, text, "rules: reminder request")
    statements = [c for i, c in enumerate(parts) if not is_chitchat(c) and (not is_question(c) or relative_clause(c, parts[:i]))]
    # An episode keeps every statement of the turn ("我上个月从成都搬到了上海，现在住在徐汇区"
    # whole), not only the clause that matched; the SemanticWriter picks facts out of it later.
    thing = " ".join(text.split()) if len(statements) == len(parts) else ("，" if zh else ", ").join(statements)
    turn = read_turn([{"role": "user", "content": text}], now)
    for name, applies in SKIPS:
        if applies(turn):
            return {**no, "reason": f"rules: {name}"}
    if any(is_personal_fact(c) for c in statements):
        return _yes(thing, "个人信息" if zh else "personal information", now, text, "rules: first-person fact")
    if any(is_personal_event(c) or is_experience(c) for c in statements):
        return _yes(thing, "个人经历" if zh else "personal event", now, text, "rules: first-person event")
    told = [c for c in statements if substantial(c) and not reaction(c) and not remark(c)]
    if told:  # when unsure, keep: a dropped fact is lost for good, a kept remark costs a little ranking
        return _yes(thing, "用户所说" if zh else "what the user said", now, text, "rules: a statement (kept when unsure)")
    if any(is_question(c) for c in parts):
        return {**no, "reason": "rules: question without personal information"}
    return {**no, "reason": "rules: fragment" if not substantial(text) else "rules: reaction or remark"}


_RELATIVE = re.compile(r"^(?:which|who|whose|where|when)\s+(?:means|meant|is|was|are|were|has|had|made|makes|gave|gives|lets|let"
                       r"|i|we|my|he|she|they)\b", re.IGNORECASE)


def relative_clause(clause: str, before: list[str]) -> bool:
    """"…, which means I'm finally eligible for Premier Silver": a clause that goes on with the statement before
    it, no question (it has no question mark and follows a clause that is no question)."""
    return bool(before) and not clause.rstrip().endswith(("?", "？")) and bool(_RELATIVE.match(clause.strip())) \
        and not is_question(before[-1])


# The turns the rules never keep, whatever else they hold (each test is certain only for a turn that says
# nothing about the speaker: text/turns.py).
SKIPS = (("laughter", laughter), ("greeting or small talk", greeting), ("fragment", fragment), ("arithmetic", arithmetic),
         ("knowledge question", knowledge_question), ("content request", content_request),
         ("request to the assistant", assistant_request),
         ("weather remark", weather_remark), ("remark about the conversation", conversation_remark))


def remember_request(text: str, now: str = "") -> dict[str, Any] | None:
    """The decision for an explicit remember request ("请记住…", "don't forget…"): yes with what
    it names, no when it names nothing ("记住这个"); None when the text is no such request."""
    if not asks_to_remember(text):
        return None
    zh = has_cjk(text)
    content = [c for c in clauses(REMEMBER.sub(" ", text)) if not is_chitchat(c)
               and not (is_question(c) and not is_personal_fact(c))  # the question asked beside it is no memory
               and c.lower() not in ("this", "that", "这个", "这件事")]
    body = ("，" if zh else ", ").join(content)
    if body and (substantial(body) or any(is_personal_fact(c) for c in content)):
        return _yes(body, "主动要求记住" if zh else "asked to remember", now, text, "rules: explicit remember request")
    return {"write_episodic": False, "context": "", "thing": "", "time": "", "who": "", "reason": "rules: remember request without content"}


def _yes(thing: str, context: str, now: str, text: str, reason: str) -> dict[str, Any]:
    return {"write_episodic": True, "context": context, "thing": thing, "time": _event_time(now, text) if now else "",
            "who": "user", "reason": reason}


@rule("write_decider")
def _write_decider(inputs: dict[str, Any]) -> dict[str, Any]:
    return decide(list(inputs.get("turns") or []), str(inputs.get("now") or ""))


# --- reconsolidator -----------------------------------------------------------------------------
def reconsolidate(memory: dict[str, Any], conversation: str) -> dict[str, Any]:
    """Append the conversation's clauses that speak of this memory and add something new."""
    old_text = str(memory.get("text") or "")
    keys = key_terms(old_text) | key_terms(str(memory.get("thing") or ""))
    lines = [line for line in (conversation or "").splitlines() if line.strip()]
    user = [line for line in lines if re.match(r"^\s*(user|用户)\s*[:：]", line, re.I)] or lines
    new: list[str] = []
    for clause in clauses("\n".join(user)):
        terms = key_terms(clause)
        if is_question(clause) or is_chitchat(clause) or not terms & keys or not terms - keys:
            continue
        if clause not in old_text and clause not in new:
            new.append(clause)
    if not new:
        return {"changed": False, "text": "", "context": "", "thing": "", "update_desc": ""}
    zh = has_cjk(old_text + "".join(new))
    added = ("，" if zh else "; ").join(new)
    text = f"{old_text}（更新：{added}）" if zh else f"{old_text} (update: {added})"
    return {"changed": True, "text": text, "context": "", "thing": "", "update_desc": ("补充：" if zh else "added: ") + added}


@rule("reconsolidator")
def _reconsolidator(inputs: dict[str, Any]) -> dict[str, Any]:
    memory = inputs.get("memory") if isinstance(inputs.get("memory"), dict) else {"text": str(inputs.get("memory") or "")}
    return reconsolidate(memory, str(inputs.get("conversation") or ""))


# --- semantic writer ------------------------------------------------------------------------------
_EN_THIRD = [
    (re.compile(r"^i am\b|^i'm\b", re.I), "The user is"),
    (re.compile(r"^i have\b|^i've got\b|^i've\b", re.I), "The user has"),
    (re.compile(r"^i was\b", re.I), "The user was"),
    (re.compile(r"^i don'?t\b|^i do not\b", re.I), "The user does not"),
    (re.compile(r"^my\b", re.I), "The user's"),
    (re.compile(r"^call me\b", re.I), "The user is called"),
    (re.compile(r"^we\b", re.I), "The user and family"),
    (re.compile(r"^our\b", re.I), "The user's family's"),
]


def third_person(clause: str) -> str:
    """"我喜欢猫" -> "用户喜欢猫"; "I live in Paris" -> "The user lives in Paris" (simple rules). A whole sentence
    in one person: the user named once at the start ("用户" once in Chinese), every other first person turned
    ("shrimp gives me hives" -> "gives them hives", "医生说我血压有点高" -> "医生说用户血压有点高")."""
    c = clause.strip()
    if has_cjk(c):
        return _third_zh(c)
    head = ""
    for pattern, repl in _EN_THIRD:
        if pattern.search(c):
            head = pattern.sub(repl, c, count=1)
            break
    if not head:
        m = re.match(r"^(?:i)\s+(?:(really|also|still|absolutely|never)\s+)?([a-z]+)\b(.*)$", c, re.I)
        if m:
            adverb, verb, rest = m.group(1), m.group(2).lower(), m.group(3)
            head = f"The user {adverb + ' ' if adverb else ''}{_third_verb(verb)}{rest}"
    if not head:  # no first-person subject: "The user says that <imperative>" is no fact (issue 55)
        return ""
    return head[:8] + _EN_REST.sub(_they, head[8:])  # head starts with "The user"


_LOWER_FIRST = {"the", "a", "an", "it", "it's", "this", "that", "there", "there's", "these", "those", "some", "every", "most",
                "my", "our", "me", "we", "us"}
_EN_REST = re.compile(r"\b(?:I'm|I am|I was|I've|I'll|I'd|I|me|my|mine|myself|we're|we've|we'll|we'd|we|us|our|ours|ourselves)\b"
                      r"|\b(?:My|Our|We)\b")
_THEY_FOR = {"i'm": "they're", "i am": "they are", "i was": "they were", "i've": "they've", "i'll": "they'll", "i'd": "they'd",
             "i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "we're": "they're",
             "we've": "they've", "we'll": "they'll", "we'd": "they'd", "we": "they", "us": "them", "our": "their",
             "ours": "theirs", "ourselves": "themselves"}

def _they(m: re.Match[str]) -> str:
    return _THEY_FOR[m.group(0).lower()]


_ZH_LEAD = re.compile(r"^(其实|另外|对了|还有|而且|然后|不过)")


def _third_zh(c: str) -> str:
    """The Chinese clause with "用户" once: 我们家 -> 用户家, 我们 -> 用户和家人, the first 我 -> 用户, any later 我 -> 其."""
    c = _ZH_LEAD.sub("", c, count=1).strip("，, ")
    if c.startswith("用户"):
        return c
    own = re.match(r"(?:我|咱)们?(家里的|家的|家|的)?", c) if other_owner(c) else None
    if own:  # "我老公是设计师" -> "用户的老公是设计师": a relative's fact stays the relative's
        c = ("用户家的" if "家" in (own.group(1) or "") else "用户的") + c[own.end():]
        return re.sub(r"我们", "他们", c).replace("我", "其")
    if "我" in c:
        c = c.replace("我们家", "用户家", 1) if c.find("我们家") == c.find("我") else (
            c.replace("我们", "用户和家人", 1) if c.find("我们") == c.find("我") else c.replace("我", "用户", 1))
        return re.sub(r"我们", "他们", c).replace("我", "其")
    if c.startswith(("家里", "家中", "家")):
        return "用户" + c
    return f"用户提到{c}"


def _third_verb(verb: str) -> str:
    if verb in ("can", "will", "would", "should", "must", "may", "might", "could", "lived", "worked", "moved", "grew", "graduated",
                "studied", "bought", "adopted", "started", "quit", "joined", "retired", "relocated") or verb.endswith("ed"):
        return verb
    if verb == "have":
        return "has"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "sh", "ch", "x", "o", "z")):
        return verb + "es"
    return verb + "s"


def whole_statement(clause: str) -> bool:
    """A clause a fact may restate: the user's own (a relative's or a friend's is restated as theirs, "用户的老公…",
    "The user's husband…"), never one whose subject is only a pronoun ("她…", "he…": whose is unknown), nor a
    request or a question."""
    owner = other_owner(clause)
    if owner and not re.match(r"^(?:[\w ,]*\b)?(?:my|our)\b|^[^我咱]{0,6}(?:我|咱)", owner, re.I):
        return False
    return not is_question(clause) and not _REQUEST.search(clause) and not _FRAGMENT.search(clause)


# "I started late", "I quit early": an event verb and an adverb, no object, so no lasting fact.
_FRAGMENT = re.compile(r"^i\s+(?:\w+\s+)?(?:started|finished|quit|joined|moved|worked|studied|ran|played|trained|got)"
                       r"(?:\s+(?:late|early|again|too|well|already|yet|soon|later|now|today|hard|fast|slowly|badly|out|up|in|off))+$", re.I)
_PLEASE = re.compile(r"^\s*(?:please|请)\s*", re.I)
_REQUEST = re.compile(r"^(?:please\s+)?(?:(?:can|could|would|will) you|please|let'?s)\b|^(?:请|麻烦|帮我|你(?:能|可以))", re.I)


def extract_facts(episode: dict[str, Any], existing: list[str]) -> list[str]:
    """First-person stable statements of the episode, one per clause, in the third person;
    transient events and facts already known (normalised) are skipped."""
    seen = {normalise_fact(f) for f in existing}
    facts = []
    for clause in clauses(str(episode.get("text", ""))):
        clause = _PLEASE.sub("", REMEMBER.sub(" ", clause)).strip(" ,，:：") or clause  # "Please remember that I'm…": what to remember
        dated = TIME_WORD.search(clause) and not _HABITUAL.search(clause)  # "this Thursday at 3pm", not "周末喜欢爬山"
        # a new home, workplace or age is a lasting fact even when the turn dates it ("I moved to Porto last week")
        lasting = bool(slots(clause)) and not _PLAN.search(clause)
        if not lasting and (_TRANSIENT.search(clause) or dated or _PLAN.search(clause) or not is_personal_fact(clause)):
            continue
        if not whole_statement(clause):
            continue
        fact = third_person(clause)
        key = normalise_fact(fact)
        if key and key not in seen:
            seen.add(key)
            facts.append(fact)
    return facts


@rule("semantic_writer")
def _semantic_writer(inputs: dict[str, Any]) -> dict[str, Any]:
    episode = inputs.get("episode") if isinstance(inputs.get("episode"), dict) else {"text": str(inputs.get("episode") or "")}
    existing = [str(f) for f in inputs.get("existing_facts") or []]
    return {"facts": [{"fact": f} for f in extract_facts(episode, existing)]}
