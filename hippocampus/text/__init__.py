"""Text heuristics shared by the offline rules provider (llm/rules) and the processors.

Scripts (the CJK class, `has_cjk`), clauses (split at punctuation, "and I", a Chinese subject
carried over), questions, small talk, fragments, first-person facts, experiences and time words,
the stop words of `key_terms`, and the normalised form used for duplicate facts. Pattern rules
in Chinese and English, no understanding: the rules answer with them when no model is set, and
the processors use them around a model (the write gate, the knowledge monitor, fact dedup).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from .lazy import lazy_compile
from .owners import subject_zh
from .references import strip_frame, with_references

# CJK ideographs: the unified block, extension A and the compatibility block.
CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HAS_CJK = lazy_compile(f"[{CJK}]")
_LATIN = lazy_compile(r"[A-Za-z\u00c0-\u024f]")
# Sentence ends, except after a title ("Dr. Wang" stays whole); a comma inside a number ("20,000") cuts nothing.
_CLAUSE_SPLIT = lazy_compile(r"(?<=[?？])|[。！!；;，、\n]+|(?<!\d),+|,+(?!\d{3}(?!\d))|(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<=\.)\s+|\.$")
_ROLE_PREFIX = lazy_compile(r"^\s*(user|assistant|system|用户|助手)\s*[:：]\s*", re.IGNORECASE)

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
_QUESTION_EN = lazy_compile(
    r"^(what|who|whom|whose|when|where|why|how|which|is|are|am|can|could|would|should|do|does|did|will|was|were|has|have|may|shall)\b(?!['’]t\b)",
    re.IGNORECASE,
)
_RELATIVE = lazy_compile(r"^(?:which|who|where|when)\s+(?:means?|meant|makes?|made|is why|was why|i|i'm|i've|we|we're|my|our)\b",
                         re.IGNORECASE)
_QUESTION_ZH = lazy_compile(r"(吗|呢|么|没有)$|什么|怎么|为什么|为何|如何|哪里|哪儿|哪个|哪些|哪一|多少|几[个点岁天年次]|是不是|有没有|能不能|可不可以|会不会|要不要")

_NOT_FACT = lazy_compile(
    r"我(想|要|得)?(问|请教|知道|了解|查)|我有(个|一个|几个)?(问题|疑问)|我是说|我觉得|我认为|我在想|我不知道|我不确定|我明白|我懂|我看看|我试试|我很好|我还好"
    r"|\bi (want|need|would like|'d like) to (know|ask|understand|learn about)\b|\bi have a question\b|\bi (wonder|think|mean|guess|see|believe|suppose)\b"
    r"|\bi'?m (not sure|wondering|curious|fine|good|ok|okay|just asking)\b|\bi (don'?t|do not) know\b"
    r"|我们?(?:来|再|先)?(?:聊聊|聊一聊|谈谈|讨论一下|说说)|\blet'?s (?:talk|chat|discuss|change the subject)\b",
    re.IGNORECASE,
)
_FACT_ZH = lazy_compile(
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
_EVENT_EN = lazy_compile(
    r"\bi (?:just |recently |finally |also |already )?(?:went|visited|met|passed|failed|lost|won|broke|hurt|booked|signed up|returned"
    r"|celebrated|finished|flew|travell?ed|got (?:married|engaged|promoted|hired|fired|back|a new))\b"
    r"|\b(?:gave|told|sent|prescribed|fixed|hired|promoted|invited|diagnosed) me\b|^(?:just )?(?:got )?back from\b",
    re.IGNORECASE,
)
_EVENT_ZH = lazy_compile(r"(?:给|帮|替|陪|带|请|送)我[^，,。？?]{1,12}了|^刚(?:刚|才)?(?:从|到|回|去|看完|做完|考完|忙完)[^，,。？?]{0,12}(?:回来|了|完)")
_FACT_EN = lazy_compile(
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
TIME_WORD = lazy_compile(
    r"今天|昨天|前天|明天|后天|今晚|昨晚|明晚|今早|刚才|刚刚|上周|下周|这周|本周|上个月|下个月|这个月|去年|今年|明年|周末|上午|下午|早上|晚上|中午|凌晨"
    r"|[0-9一二三四五六七八九十]+\s*(?:月|号|日|点|年)|(?:星期|周|礼拜)[一二三四五六日天]"
    r"|\b(?:today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|week|weekend|month|year)|last (?:night|week|weekend|month|year|\w+day)"
    r"|(?:next|this|coming) (?:week|weekend|month|year|\w+day)|on (?:mon|tues|wednes|thurs|fri|satur|sun)day|\d{1,2}\s*(?:am|pm)"
    r"|in (?:january|february|march|april|may|june|july|august|september|october|november|december)|\d+ (?:days?|weeks?|months?|years?) ago|ago|recently|just now|earlier today)\b",
    re.IGNORECASE,
)
FIRST_PERSON = lazy_compile(r"我|咱|\b(?:i|i'm|i've|i'll|i'd|me|my|mine|we|we're|we've|our|us)\b", re.IGNORECASE)


def normalise_fact(text: str) -> str:
    """For duplicate checks only: NFKC, lower case, no punctuation or spacing, no leading subject."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = "".join(ch if ch.isalnum() or ch.isspace() else " " for ch in text)
    text = " ".join(text.split())
    text = re.sub(r"^(the user's|the user|user's|user|用户的|用户|我的|我|i am|i'm|i|my)\s*", "", text)
    return text.replace(" ", "") if HAS_CJK.search(text) else text


_AND_I = lazy_compile(r"\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|my|we|our)\b)(?!i\s+(?:are|were|have|had|will|both)\b)", re.IGNORECASE)
_ZH_SUBJECTLESS = lazy_compile(r"^(?:也|还|都|平时|周末|每天|每周|经常|现在|目前|在|做|是|住|喜欢|爱|讨厌|不喜欢|有|养|对|不吃|不喝|最|特别|很|非常|已经|正在)")
_ZH_SUBJECT = lazy_compile(r"^(?:其实|另外|对了|还有|而且|然后)?(?:我|你|他|她|它|咱|我们|你们|他们)")


def clauses(text: str) -> list[str]:
    """Clauses of the user's text, split at punctuation, line breaks and "and I".

    A Chinese clause without a subject right after one that began with a subject inherits that subject
    whole ("我叫李雷，在杭州工作" -> "我叫李雷", "我在杭州工作"; "我老公叫李明，是一名建筑设计师" -> "我老公叫李明",
    "我老公是一名建筑设计师"): a cut never moves a relative's fact to the user (text/owners.py)."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = _ROLE_PREFIX.sub("", line)
        subject = ""
        for raw in _CLAUSE_SPLIT.split(_AND_I.sub(", ", line)):
            c = (raw or "").strip(" \t\"'“”‘’()（）[]【】-—:：.。")
            if not c:
                continue
            if HAS_CJK.search(c[:1]) and subject and not _ZH_SUBJECT.match(c) and _ZH_SUBJECTLESS.match(c):
                c = subject + c
            else:
                subject = subject_zh(c) if HAS_CJK.search(c[:1]) else ""
            out.append(c)
    return out


# "When I was a kid", "What I really want is…", "How I met my wife…": a wh-word with no inversion, no question.
_WH_STATEMENT = lazy_compile(r"^(?:what|when|where|how|why|who)\s+(?:i|i'm|we|my|our)\b(?!.*[?？]\s*$)", re.IGNORECASE)


def is_question(clause: str) -> bool:
    """Asked, not told. A relative clause ("which means I'm finally eligible", "where I grew up") opens with a
    question word but tells: it is cut from nothing."""
    c = clause.strip()
    if c.endswith(("?", "？")):
        return True
    if _WH_STATEMENT.match(c):
        return False
    return (bool(_QUESTION_EN.match(c)) and not _RELATIVE.match(c)) or bool(_QUESTION_ZH.search(c.rstrip("?？ ")))


def is_chitchat(clause: str) -> bool:
    key = unicodedata.normalize("NFKC", clause).lower().strip(" .!?~…。！？,，'\"")
    key = re.sub(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]", "", key).strip()
    return not key or key in _CHITCHAT or key.rstrip(_PARTICLES) in _CHITCHAT or key in {"!", "?", "..."}


def substantial(text: str) -> bool:
    """Not a fragment: at least 2 English words, or 3 units counting each Chinese character,
    word and number as one ("我叫Alice")."""
    cjk = len(HAS_CJK.findall(text))
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", text)
    numbers = re.findall(r"\d+", text)
    return len(words) >= 2 or cjk + len(words) + len(numbers) >= 3


def is_personal_fact(clause: str) -> bool:
    return not _NOT_FACT.search(clause) and bool(_FACT_ZH.search(clause) or _FACT_EN.search(clause))


def is_experience(clause: str) -> bool:
    """Something that happened to the speaker, often told without "I" as the subject."""
    return not _NOT_FACT.search(clause) and bool(_EVENT_ZH.search(clause) or _EVENT_EN.search(clause))


def is_personal_event(clause: str) -> bool:
    return not _NOT_FACT.search(clause) and bool(FIRST_PERSON.search(clause) and TIME_WORD.search(clause)) and substantial(clause)


def has_cjk(text: str) -> bool:
    """Whether the text has a CJK ideograph (then it is answered in Chinese, joined without spaces)."""
    return bool(HAS_CJK.search(text))


def script_of(text: str) -> str:
    """'han', 'latin' or 'other': the script most of the letters are written in."""
    han = len(HAS_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    if han == 0 and latin == 0:
        return "other"
    # a Chinese character carries about one word; an English word about five letters
    return "han" if han * 5 >= latin else "latin"


def has_first_person(text: str) -> bool:
    return bool(FIRST_PERSON.search(text))


def has_time_word(text: str) -> bool:
    return bool(TIME_WORD.search(text))


def user_lines(turns: list[dict[str, Any]]) -> str:
    """The user's turns, one a line (what the write rules read)."""
    said = [str(t.get("content", "")) for t in turns if str(t.get("role", "user")) == "user"]
    return "\n".join(s for s in said if s.strip())


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
    for run in re.findall(f"[{CJK}]+", norm):
        bigrams |= {run[i : i + 2] for i in range(len(run) - 1)}
    return words | {b for b in bigrams - _COMMON_BIGRAMS if not set(b) & set("我你他她它的了是在和也都就很吗呢吧啊")}


# Forget (or do-not-keep) requests, at the start of a clause; "don't forget" and "别忘了" are remember requests.
FORGET = lazy_compile(
    r"^(?:ok(?:ay)?\s+|and\s+|also\s+)?(?:please\s+)?(?:(?:can|could|would|will) you\s+)?(?:please\s+)?"
    r"(?:forget\s+(?:that|what|about|everything|it|this|my|i|the|all|those|these)\b|(?:don'?t|do not)\s+(?:remember|save|store|record|keep)\s+(?:that|this|it)\b)"
    r"|^(?:请你?|麻烦你?|帮我|你(?:可以|能)?)?(?:忘掉|忘记)(?!告诉|跟你|和你|说|提|带|拿|关|锁|吃|买|做|写|交|给|还|问|了)"
    r"|^(?:请你?|麻烦你?|帮我|你)?把.{1,30}(?:忘掉|忘记|忘了)(?:吧|吗|好吗)?$"
    r"|^(?:这个|这件事|这些|这条|刚才的?)?(?:请)?(?:不要|别|不用|不必)(?:记住|记下来|记下|记录|记着|记)",
    re.IGNORECASE,
)
_FORGET_WORDS = {"forget", "said", "told", "tell", "mentioned", "about", "what", "please", "remember", "save", "store", "record",
                 "keep", "everything", "old", "anymore", "ever", "忘掉", "忘记", "说的", "刚才", "记住", "记录", "不要", "麻烦"}


def forget_clauses(text: str) -> tuple[list[str], list[str]]:
    """(the clauses that ask to forget something, the other clauses) of what the user said."""
    parts = clauses(text)
    asks = with_references(parts, [c for c in parts if FORGET.search(c.strip())])  # "昨天说的网贷那件事…，别记着"
    return asks, [c for c in parts if c not in asks]


def _stems(terms: set[str]) -> set[str]:
    return {t[:-1] if t.isascii() and len(t) > 3 and t.endswith("s") else t for t in terms} - {"user", "user'"}


_FORGET_FRAME_ZH = lazy_compile(r"请你?|麻烦你?|帮我|你(?:可以|能)?|把|的事情?|的那件事|忘掉|忘记|忘了|吧|吗|好吗|这个|这件事|不要|别|记住|记下来|记下|记录|记")
_NUMBER = lazy_compile(r"\d{3,}")


def _terms(text: str) -> set[str]:
    """Content words, Chinese pairs and numbers of 3+ digits ("555-0199": 555, 0199)."""
    return _stems(key_terms(text)) | set(_NUMBER.findall(text or ""))


def forget_terms(asks: list[str]) -> set[str]:
    """The content words a forget request names ("forget that I like jazz": like, jazz; "帮我把前男友小王的事忘掉吧":
    the pairs of 前男友小王), its framing words left out."""
    return set().union(*(_terms(strip_frame(_FORGET_FRAME_ZH.sub(" ", a))) for a in asks)) - _FORGET_WORDS if asks else set()


def names_memory(memory: str, asks: list[str], coverage: float = 0.75) -> bool:
    """A forget request names this memory when the memory holds most of the words the request names (at
    least `coverage` of them): "forget that I like jazz" names "The user likes jazz", not "I like cats"."""
    wanted = forget_terms(asks)
    if not wanted:
        return False
    return len(wanted & _terms(memory)) >= max(1.0, coverage * len(wanted))


# A correction that takes back an earlier statement: "I don't live in Paris anymore", "I no longer eat meat",
# "其实我不吃辣了", "我已经不住在北京了".
_TAKEN_BACK = lazy_compile(
    r"\b(?:don'?t|do not|doesn'?t|am not|'m not|isn'?t|not)\b.*\b(?:anymore|any more|any longer)\b|\bno longer\b"
    r"|(?:已经|现在)?不再|(?:已经|现在)不|^(?:其实|现在|我现在|其实我|我其实)?我?(?:已经)?不[\u4e00-\u9fff]{1,10}了",
    re.IGNORECASE,
)
_TAKEN_BACK_WORDS = {"don't", "doesn't", "not", "anymore", "any", "more", "longer", "actually", "really", "now", "isn't"}
_TAKEN_BACK_ZH = lazy_compile(r"其实|现在|已经|不再|不|了|再")


def taken_back(text: str) -> list[str]:
    """The clauses of what the user said that take an earlier statement back (a negation with "anymore",
    "no longer", "不…了", "不再"); questions never do."""
    return [c for c in clauses(text) if _TAKEN_BACK.search(c.strip()) and not is_question(c)]


def names_taken_back(memory: str, clause: str) -> bool:
    """The memory states what `clause` takes back: it holds every content word of the clause (negation left out)."""
    wanted = _terms(_TAKEN_BACK_ZH.sub(" ", clause)) - _TAKEN_BACK_WORDS
    return bool(wanted) and wanted <= _terms(memory)
