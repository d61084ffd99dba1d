"""Offline rules for the online processors: WriteDecider, Reconsolidator, SemanticWriter.

A deterministic, honestly degraded mode: keyword and pattern rules in Chinese and
English, no understanding. Text is cut into clauses (at punctuation); a clause that
is a question never counts as a statement about the user, so "What should I eat
today?" is not a memory while "我下周要面试，怎么准备？" is.

- write_decider: greetings and acknowledgements, fragments and knowledge questions are
  not stored; a remember-phrase (记住/别忘了/remember/don't forget/note that) with some
  content always is; so are first-person facts (我是/我叫/我喜欢/my name is/I live...)
  and first-person clauses with a time word (昨天我.../I ... tomorrow), and experiences told
  without "I" as the subject (医生给我开了药, back from Kyoto). The episode is the whole turn.
- reconsolidator: when the conversation mentions the memory's key words and says
  something new about them, the new clauses are appended to the memory as an update.
- semantic_writer: first-person clauses with a stable-fact pattern (name, job, home,
  family, pets, likes, allergies, diet...), no date and no plan become facts in the
  third person, minus those already known (normalised comparison).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta
from typing import Any

from . import rule
from .lifecycle import slots

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAS_CJK = re.compile(f"[{_CJK}]")
# Sentence ends, except after a title ("Dr. Wang" stays whole).
_CLAUSE_SPLIT = re.compile(r"(?<=[?？])|[。！!；;，,、\n]+|(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<=\.)\s+|\.$")
_ROLE_PREFIX = re.compile(r"^\s*(user|assistant|system|用户|助手)\s*[:：]\s*", re.IGNORECASE)

# --- write decider vocabulary -------------------------------------------------------------
_REMEMBER = re.compile(
    r"(请你?|帮我|麻烦你?)?(记住|记一下|记下来|记着|别忘了|不要忘了|不要忘记|别忘记)"
    r"|\b(please\s+)?(remember|don'?t forget|do not forget|note that|make a note|keep in mind|save this)\b(\s+that\b)?[:,]?",
    re.IGNORECASE,
)
_REMIND = re.compile(r"\bremind me\b|提醒我", re.IGNORECASE)
_NOT_A_REQUEST = re.compile(r"(你还?记得|还记得|记不记得|记得吗|\b(do|did|can|could|would|will) you (still )?remember\b)", re.IGNORECASE)
_CHITCHAT = {
    # English greetings, thanks and acknowledgements (whole clauses only)
    "hi", "hello", "hey", "hiya", "yo", "hi there", "hello there", "hey there", "good morning", "good afternoon",
    "good evening", "good night", "morning", "night", "how are you", "how are you doing", "how's it going",
    "how is it going", "what's up", "whats up", "sup", "thanks", "thank you", "thanks a lot", "thank you so much",
    "thank you very much", "thx", "ty", "ok", "okay", "k", "cool", "nice", "great", "awesome", "lol", "haha",
    "hahaha", "bye", "goodbye", "see you", "see ya", "see you later", "later", "yes", "yeah", "yep", "no", "nope",
    "sure", "got it", "i see", "fine", "i'm fine", "i am fine", "i'm good", "i am good", "not bad", "you too",
    "nice to meet you", "same here", "me too", "no problem", "np", "alright", "all right", "sounds good",
    "good", "wow", "oh", "hmm", "ah", "right", "really", "interesting", "and you", "how about you", "bye bye",
    # Chinese
    "你好", "您好", "嗨", "哈喽", "哈啰", "早", "早上好", "上午好", "下午好", "晚上好", "晚安", "谢谢", "多谢",
    "谢谢你", "感谢", "好的", "好", "嗯", "嗯嗯", "哦", "噢", "行", "对", "是的", "对的", "拜拜", "再见", "回头见",
    "哈哈", "哈哈哈", "呵呵", "最近怎么样", "你好吗", "在吗", "在不在", "吃了吗", "吃饭了吗", "怎么样", "还行",
    "不错", "我很好", "我还好", "挺好的", "没问题", "知道了", "明白了", "收到", "好吧", "可以", "厉害", "真棒",
    "你呢", "你怎么样", "早安", "好久不见", "辛苦了", "没事", "没关系", "不客气", "今天怎么样", "你今天怎么样",
}
_PARTICLES = "呀啊哦呢啦嘛吧哈~～ "
_QUESTION_EN = re.compile(
    r"^(what|who|whom|whose|when|where|why|how|which|is|are|am|can|could|would|should|do|does|did|will|was|were|has|have|may|shall)\b",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(r"(吗|呢|么|没有)$|什么|怎么|为什么|为何|如何|哪里|哪儿|哪个|哪些|哪一|多少|几[个点岁天年次]|是不是|有没有|能不能|可不可以|会不会|要不要")
_NOT_FACT = re.compile(
    r"我(想|要|得)?(问|请教|知道|了解|查)|我有(个|一个|几个)?(问题|疑问)|我是说|我觉得|我认为|我在想|我不知道|我不确定|我明白|我懂|我看看|我试试|我很好|我还好"
    r"|\bi (want|need|would like|'d like) to (know|ask|understand|learn about)\b|\bi have a question\b|\bi (wonder|think|mean|guess|see|believe|suppose)\b"
    r"|\bi'?m (not sure|wondering|curious|fine|good|ok|okay|just asking)\b|\bi (don'?t|do not) know\b"
    r"|我们?(?:来|再|先)?(?:聊聊|聊一聊|谈谈|讨论一下|说说)|\blet'?s (?:talk|chat|discuss|change the subject)\b",
    re.IGNORECASE,
)
_FACT_ZH = re.compile(
    r"我(?:的名字|名字)?(?:是|叫|姓)|我今年|我(?:现在)?(?:住在|住|家在|来自|老家)|我(?:在|于).{1,15}(?:工作|上班|上学|读书|实习|读研|读博|教书)"
    r"|我(?:是|当)[^，,。]{0,8}(?:师|员|生|家|工|医|者|手)|我[^，,。你他她]{0,6}?(?:喜欢|爱吃|爱喝|爱看|爱玩|热爱|讨厌|不喜欢|不爱|受不了|害怕)"
    r"|我(?:在[^，,。]{1,8})?(?:做|当|从事)[^，,。]{0,8}(?:开发|工程师|设计|老师|医生|销售|运营|产品|会计|律师|护士|研究|工作|生意|编辑|记者|程序员)"
    r"|我(?:对|吃).{0,10}过敏|我(?:不吃|不喝|吃素|戒烟|戒酒|不能吃|不能喝)|我(?:有|养了|养着|养)(?:一|两|三|几|个|只|条|条|位)?.{0,4}(?:猫|狗|孩子|女儿|儿子|姐|妹|哥|弟|宠物|车|房)"
    r"|我(?:的)?(?:妈妈|爸爸|母亲|父亲|老婆|老公|妻子|丈夫|女朋友|男朋友|姐姐|妹妹|哥哥|弟弟|女儿|儿子|孩子|猫|狗|生日|工作|专业|老板|同事)"
    r"|我(?:已经)?(?:结婚|离婚|毕业|退休|怀孕|搬到|搬家|换工作|辞职|升职|入职)|我(?:会说|会讲|在学|正在学|学了|学会)|我(?:每天|经常|平时|一般|总是|习惯)"
    r"|我(?:打算|计划|准备|决定|想去|要去|将要|即将)|我们(?:打算|计划|准备|决定|想去|要去|下周|下个月|明年|周末|上周|上个月|去年)"
    r"|我和[^，,。你]{1,8}?(?:一起|去|在|打算|计划|准备|看了|买了|搬)"
)
# Experiences: worth an episode, never a stable fact ("I went to...", "医生给我开了药", "刚从北京回来").
_EVENT_EN = re.compile(
    r"\bi (?:just |recently |finally |also |already )?(?:went|visited|met|passed|failed|lost|won|broke|hurt|booked|signed up|returned"
    r"|celebrated|finished|flew|travell?ed|got (?:married|engaged|promoted|hired|fired|back|a new))\b"
    r"|\b(?:gave|told|sent|prescribed|fixed|hired|promoted|invited|diagnosed) me\b|^(?:just )?(?:got )?back from\b",
    re.IGNORECASE,
)
_EVENT_ZH = re.compile(r"(?:给|帮|替|陪|带|请|送)我[^，,。？?]{1,12}了|^刚(?:刚|才)?(?:从|到|回|去|看完|做完|考完|忙完)[^，,。？?]{0,12}(?:回来|了|完)")
_FACT_EN = re.compile(
    r"\bmy name(?:'s| is)\b|\bcall me\b|\bi'?m called\b|\bi (?:am|'m) (?:a|an|the|\d+|from|married|single|divorced|engaged|pregnant|retired|vegan|vegetarian|allergic|lactose|left-handed|studying|working|learning|moving|planning|going to|getting|trying to|training)\b"
    r"|\bi'm (?:a|an|from|married|single|vegan|vegetarian|allergic|pregnant|retired|studying|working|learning|moving|planning|going to|getting)\b"
    r"|\bi (?:really |also |still |absolutely )?(?:like|love|enjoy|hate|dislike|prefer|adore|can'?t stand)\b|\bi (?:don'?t|do not|never) (?:like|eat|drink|smoke|drive)\b"
    r"|\bi (?:just |recently |finally |also |still |already |actually )?(?:live|lived|work|worked|study|studied|teach|grew up|was born|moved|relocated|graduated|retired|quit|started|joined|bought|adopted|own|speak|play|run|train|volunteer)\b"
    r"|\bi (?:just |also |still |already )?(?:have|'ve got|have got|had) (?:a|an|two|three|four|five|\d+|my|no)\b|\bi'?ve (?:just )?(?:been|got|had|started|moved|lived|worked|joined|finished|passed)\b"
    r"|\bmy (?:wife|husband|partner|girlfriend|boyfriend|sister|brother|mom|mum|mother|dad|father|son|daughter|kids?|children|family|dog|cat|pet|birthday|job|boss|favou?rite|doctor|name|home|flat|apartment|house|car|team)\b"
    r"|\bi (?:will|'ll|plan to|intend to|am going to|'m going to|'m planning to|am planning to|want to|hope to|need to) (?:move|start|quit|visit|go|fly|travel|marry|get|buy|run|take|have|see)\b"
    r"|\b(?:we|we're|we are|our) (?:got|moved|live|bought|adopted|have|are|kids?|son|daughter|family|wedding|house)\b",
    re.IGNORECASE,
)
_TIME_WORD = re.compile(
    r"今天|昨天|前天|明天|后天|今晚|昨晚|明晚|今早|刚才|刚刚|上周|下周|这周|本周|上个月|下个月|这个月|去年|今年|明年|周末|上午|下午|早上|晚上|中午|凌晨"
    r"|[0-9一二三四五六七八九十]+\s*(?:月|号|日|点|年)|(?:星期|周|礼拜)[一二三四五六日天]"
    r"|\b(?:today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|week|weekend|month|year)|last (?:night|week|weekend|month|year|\w+day)"
    r"|(?:next|this|coming) (?:week|weekend|month|year|\w+day)|on (?:mon|tues|wednes|thurs|fri|satur|sun)day|\d{1,2}\s*(?:am|pm)"
    r"|in (?:january|february|march|april|may|june|july|august|september|october|november|december)|\d+ (?:days?|weeks?|months?|years?) ago|ago|recently|just now|earlier today)\b",
    re.IGNORECASE,
)
_HABITUAL = re.compile(r"每|周末|平时|经常|通常|一般|总是|\b(?:every|usually|always|often|on weekends|weekends)\b", re.IGNORECASE)
# A plan is an episode (it may change), not a stable fact.
_PLAN = re.compile(r"打算|计划|准备|决定|想去|要去|将要|即将|\b(?:planning|plan to|going to|intend to|hope to|about to|moving to)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"我|咱|\b(?:i|i'm|i've|i'll|i'd|me|my|mine|we|we're|we've|our|us)\b", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"今天|昨天|前天|明天|后天|今晚|昨晚|刚才|刚刚|此刻|这会儿|正在|\b(?:today|tonight|yesterday|tomorrow|right now|now|just|at the moment|this morning|this afternoon)\b",
    re.IGNORECASE,
)
_DAY_OFFSET = [
    (re.compile(r"前天|\bday before yesterday\b", re.I), -2),
    (re.compile(r"昨天|昨晚|\byesterday\b|\blast night\b", re.I), -1),
    (re.compile(r"后天|\bday after tomorrow\b", re.I), 2),
    (re.compile(r"明天|明晚|\btomorrow\b", re.I), 1),
]


# --- shared helpers -------------------------------------------------------------------------
def normalise_fact(text: str) -> str:
    """For duplicate checks only: NFKC, lower case, no punctuation or spacing, no leading subject."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text)
    text = " ".join(text.split())
    text = re.sub(r"^(the user's|the user|user's|user|用户的|用户|我的|我|i am|i'm|i|my)\s*", "", text)
    return text.replace(" ", "") if _HAS_CJK.search(text) else text


_AND_I = re.compile(r"\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|my|we|our)\b)(?!i\s+(?:are|were|have|had|will|both)\b)", re.IGNORECASE)
_ZH_SUBJECTLESS = re.compile(r"^(?:也|还|都|平时|周末|每天|每周|经常|现在|目前|在|做|是|住|喜欢|爱|讨厌|不喜欢|有|养|对|不吃|不喝|最|特别|很|非常|已经|正在)")
_ZH_SUBJECT = re.compile(r"^(?:其实|另外|对了|还有|而且|然后)?(?:我|你|他|她|它|咱|我们|你们|他们)")


def clauses(text: str) -> list[str]:
    """Clauses of the user's text, split at punctuation, line breaks and "and I".

    A Chinese clause without a subject right after one that began with 我 inherits it
    ("我叫李雷，在杭州工作" -> "我叫李雷", "我在杭州工作")."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = _ROLE_PREFIX.sub("", line)
        prev_first_person = False
        for raw in _CLAUSE_SPLIT.split(_AND_I.sub(", ", line)):
            c = (raw or "").strip(" \t\"'“”‘’()（）[]【】-—:：.。")
            if not c:
                continue
            if _HAS_CJK.search(c[:1]) and prev_first_person and not _ZH_SUBJECT.match(c) and _ZH_SUBJECTLESS.match(c):
                c = "我" + c
            else:
                prev_first_person = bool(re.match(r"^(?:其实|另外|对了|还有|而且|然后)?我(?!们)", c))
            out.append(c)
    return out


def is_question(clause: str) -> bool:
    c = clause.strip()
    return c.endswith(("?", "？")) or bool(_QUESTION_EN.match(c)) or bool(_QUESTION_ZH.search(c.rstrip("?？ ")))


def is_chitchat(clause: str) -> bool:
    key = unicodedata.normalize("NFKC", clause).lower().strip(" .!?~…。！？,，'\"")
    key = re.sub(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]", "", key).strip()
    return not key or key in _CHITCHAT or key.rstrip(_PARTICLES) in _CHITCHAT or key in {"!", "?", "..."}


def substantial(text: str) -> bool:
    """Not a fragment: at least 2 English words, or 3 units counting each Chinese character,
    word and number as one ("我叫Alice")."""
    cjk = len(_HAS_CJK.findall(text))
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", text)
    numbers = re.findall(r"\d+", text)
    return len(words) >= 2 or cjk + len(words) + len(numbers) >= 3


def is_personal_fact(clause: str) -> bool:
    return not _NOT_FACT.search(clause) and bool(_FACT_ZH.search(clause) or _FACT_EN.search(clause))


def is_experience(clause: str) -> bool:
    """Something that happened to the speaker, often told without "I" as the subject."""
    return not _NOT_FACT.search(clause) and bool(_EVENT_ZH.search(clause) or _EVENT_EN.search(clause))


def is_personal_event(clause: str) -> bool:
    return not _NOT_FACT.search(clause) and bool(_FIRST_PERSON.search(clause) and _TIME_WORD.search(clause)) and substantial(clause)


def _zh(text: str) -> bool:
    return bool(_HAS_CJK.search(text))


def _user_lines(turns: list[dict[str, Any]]) -> str:
    said = [str(t.get("content", "")) for t in turns if str(t.get("role", "user")) == "user"]
    return "\n".join(s for s in said if s.strip())


def _event_time(now: str, text: str) -> str:
    try:
        base = datetime.fromisoformat(now.replace("Z", "+00:00"))
    except ValueError:
        return ""
    for pattern, days in _DAY_OFFSET:
        if pattern.search(text):
            return (base + timedelta(days=days)).isoformat()
    return base.isoformat()


# --- write decider ----------------------------------------------------------------------------
def decide(turns: list[dict[str, Any]], now: str = "") -> dict[str, Any]:
    """The offline write decision for these turns (only the user's turns are read)."""
    text = _user_lines(turns)
    no = {"write_episodic": False, "context": "", "thing": "", "time": "", "who": ""}
    parts = clauses(text)
    if not parts or all(is_chitchat(c) for c in parts):
        return {**no, "reason": "rules: greeting or small talk"}
    zh = _zh(text)
    remembered = remember_request(text, now)
    if remembered is not None:
        return remembered
    if _REMIND.search(text) and substantial(text):  # a reminder is a todo: kept whole, so it reads as one
        return _yes(" ".join(text.split()), "提醒" if zh else "a reminder", now, text, "rules: reminder request")
    statements = [c for c in parts if not is_question(c) and not is_chitchat(c)]
    # An episode keeps every statement of the turn ("我上个月从成都搬到了上海，现在住在徐汇区"
    # whole), not only the clause that matched; the SemanticWriter picks facts out of it later.
    thing = " ".join(text.split()) if len(statements) == len(parts) else ("，" if zh else ", ").join(statements)
    if any(is_personal_fact(c) for c in statements):
        return _yes(thing, "个人信息" if zh else "personal information", now, text, "rules: first-person fact")
    if any(is_personal_event(c) or is_experience(c) for c in statements):
        return _yes(thing, "个人经历" if zh else "personal event", now, text, "rules: first-person event")
    if any(is_question(c) for c in parts):
        return {**no, "reason": "rules: question without personal information"}
    if not substantial(text):
        return {**no, "reason": "rules: fragment"}
    return {**no, "reason": "rules: no personal information found"}


def remember_request(text: str, now: str = "") -> dict[str, Any] | None:
    """The decision for an explicit remember request ("请记住…", "don't forget…"): yes with what
    it names, no when it names nothing ("记住这个"); None when the text is no such request."""
    if not _REMEMBER.search(text) or _NOT_A_REQUEST.search(text):
        return None
    zh = _zh(text)
    content = [c for c in clauses(_REMEMBER.sub(" ", text)) if not is_chitchat(c) and c.lower() not in ("this", "that", "这个", "这件事")]
    body = ("，" if zh else ", ").join(content)
    if body and (substantial(body) or any(is_personal_fact(c) for c in content)):
        return _yes(body, "主动要求记住" if zh else "asked to remember", now, text, "rules: explicit remember request")
    return {"write_episodic": False, "context": "", "thing": "", "time": "", "who": "", "reason": "rules: remember request without content"}


def has_first_person(text: str) -> bool:
    return bool(_FIRST_PERSON.search(text))


def has_time_word(text: str) -> bool:
    return bool(_TIME_WORD.search(text))


def user_lines(turns: list[dict[str, Any]]) -> str:
    """The user's turns, one a line (what the write rules read)."""
    return _user_lines(turns)


def _yes(thing: str, context: str, now: str, text: str, reason: str) -> dict[str, Any]:
    return {"write_episodic": True, "context": context, "thing": thing, "time": _event_time(now, text) if now else "",
            "who": "user", "reason": reason}


@rule("write_decider")
def _write_decider(inputs: dict[str, Any]) -> dict[str, Any]:
    return decide(list(inputs.get("turns") or []), str(inputs.get("now") or ""))


# --- reconsolidator -----------------------------------------------------------------------------
_COMMON_BIGRAMS = set(
    "今天 昨天 明天 我们 你们 他们 她们 什么 怎么 一个 没有 这个 那个 现在 时候 可以 觉得 知道 因为 所以 但是 还是 就是 不是 已经 真的 一下 我的 你的".split()
)
_STOP_EN = set(
    "the and for you your are was were with that this have has had but not from they them their there what when where who why how "
    "about just really very also then than into over some any all out get got can could would should will did does done been being "
    "its it's i'm i've i'll we're you're let's okay yes sure thanks".split()
)


def key_terms(text: str) -> set[str]:
    """English content words (3+ letters) and Chinese character pairs, minus common ones."""
    norm = unicodedata.normalize("NFKC", text or "").lower()
    words = {w for w in re.findall(r"[a-z][a-z'-]{2,}", norm) if w not in _STOP_EN}
    bigrams: set[str] = set()
    for run in re.findall(f"[{_CJK}]+", norm):
        bigrams |= {run[i : i + 2] for i in range(len(run) - 1)}
    return words | {b for b in bigrams - _COMMON_BIGRAMS if not set(b) & set("我你他她它的了是在和也都就很吗呢吧啊")}


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
    zh = _zh(old_text + "".join(new))
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
    """"我喜欢猫" -> "用户喜欢猫"; "I live in Paris" -> "The user lives in Paris" (simple rules)."""
    c = clause.strip()
    if _zh(c):
        c = re.sub(r"^(其实|另外|对了|还有|而且)?我们", "用户和家人", c, count=1)
        return re.sub(r"^(其实|另外|对了|还有|而且)?我", "用户", c, count=1) if "我" in c[:4] else f"用户：{c}"
    for pattern, repl in _EN_THIRD:
        if pattern.search(c):
            return pattern.sub(repl, c, count=1)
    m = re.match(r"^(?:i)\s+(?:(really|also|still|absolutely|never)\s+)?([a-z]+)\b(.*)$", c, re.I)
    if m:
        adverb, verb, rest = m.group(1), m.group(2).lower(), m.group(3)
        return f"The user {adverb + ' ' if adverb else ''}{_third_verb(verb)}{rest}"
    return f"The user: {c}"


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


def extract_facts(episode: dict[str, Any], existing: list[str]) -> list[str]:
    """First-person stable statements of the episode, one per clause, in the third person;
    transient events and facts already known (normalised) are skipped."""
    seen = {normalise_fact(f) for f in existing}
    facts = []
    for clause in clauses(str(episode.get("text", ""))):
        dated = _TIME_WORD.search(clause) and not _HABITUAL.search(clause)  # "this Thursday at 3pm", not "周末喜欢爬山"
        # a new home, workplace or age is a lasting fact even when the turn dates it ("I moved to Porto last week")
        lasting = bool(slots(clause)) and not _PLAN.search(clause)
        if not lasting and (_TRANSIENT.search(clause) or dated or _PLAN.search(clause) or not is_personal_fact(clause)):
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
