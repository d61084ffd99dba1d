"""What kind of turn the user said: the classes the write gate (processors/gate.py) and the offline
write rules (llm/rules/writing.py) both read, so that neither borrows from the other.

Each test takes a `Turn` (the user's words, their clauses, whether they answer an assistant's question)
and says whether the whole turn is of one class: laughter, small talk, a fragment, arithmetic, a
knowledge question, a request for content, a weather remark, a remark about the conversation or the
assistant. Every test is certain only for turns that say nothing about the speaker (`impersonal`):
"Write a poem for my dog Max" is no mere request.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import text as T
from .lazy import lazy_compile
from .requests import prefers

# --- vocabulary ---------------------------------------------------------------------------------

# An explicit request to remember ("请记住…", "don't forget…", "remember that…"): one pattern for the write
# rules and the importance rule. "I remember my first car" and "remember when we…" ask for nothing.
REMEMBER = lazy_compile(
    r"(?:请你?|帮我|麻烦你?)?(?:记住|记一下|记下来|记着|别忘了?|别忘记|不要忘了?|不要忘记)"
    r"|(?:^|\bplease\s+|(?<=[.!?,;:，。！？])\s*)remember\b(?!\s+(?:when|how|if|what|where|who|why)\b)(?:\s+that\b)?[:,]?"
    r"|\bremember (?:that|this)\b[:,]?"
    r"|\b(?:please\s+)?(?:don'?t forget|do not forget|note that|make a note|keep in mind|save this)\b(?:\s+that\b)?[:,]?",
    re.IGNORECASE,
)
# ...unless it asks whether the assistant remembers ("你还记得吗", "do you remember").
NOT_A_REQUEST = lazy_compile(r"你还?记得|还记得|记不记得|记得吗|\b(?:do|did|can|could|would|will) you (?:still )?remember\b", re.I)


def asks_to_remember(text: str) -> bool:
    """The user explicitly asked to remember something (not whether the assistant remembers)."""
    return bool(REMEMBER.search(text or "")) and not NOT_A_REQUEST.search(text or "")


_LAUGHTER = lazy_compile(r"^(?:[哈呵嘿嘻嘎h]{2,}|(?:ha|he){2,}h?|l+o+l+[ol]*|lmao+|rofl|xd+|233+|笑死(?:我了)?)+$", re.IGNORECASE)
_EXTRA_CHITCHAT = {
    # thanks, praise and reactions
    "太有帮助了", "很有帮助", "非常有帮助", "帮大忙了", "帮了大忙", "太棒了", "太好了", "太好笑了", "好好笑", "太搞笑了", "有意思",
    "that helps", "that helped", "very helpful", "that's helpful", "that was helpful", "so helpful", "so funny", "that's funny",
    "hilarious", "that's hilarious", "good idea", "great idea", "sounds like a good idea", "that sounds like a good idea",
    "that sounds good", "that makes sense", "makes sense", "perfect", "amazing", "love it",
    # acknowledgements with a subject
    "我知道了", "我明白了", "我懂了", "我了解了", "i understand", "i see what you mean", "i get it", "i got it",
    # leaving
    "talk tomorrow", "talk later", "talk soon", "talk to you later", "ttyl", "gotta go", "明天再聊", "回头聊", "下次聊", "改天聊",
    "辛苦", "你真棒", "你太棒了", "你真好",
    "fair enough", "ok cool", "okay cool", "oh my goodness", "oh my god", "omg", "bye for now", "sweet as", "sweet", "cheers",
    "good morning dear", "no worries", "all good", "sounds great", "got it thanks", "晓得了", "懂了", "懂了懂了", "谢谢侬", "好滴",
    "知道啦", "好嘞", "行吧", "明白", "了解",
}
_FILLER_EN = {"and", "then", "so", "but", "or", "um", "umm", "uh", "uhh", "er", "erm", "well", "like", "anyway", "hmm", "hm", "mm", "mhm",
              "also", "and then", "so what", "ok", "okay", "wait", "what", "huh", "oh", "yeah", "right"}
_FILLER_ZH = lazy_compile(r"^(?:那个|这个|就是|然后|所以|但是|还有|而且|嗯|呃|额|啊|哦|那|这|…|\.)+$")
_ARITHMETIC = lazy_compile(
    r"^(?:what(?:'s| is)|calculate|compute|计算|算一下|请问)?\s*[\d.\s()]+(?:[-+*/×÷^%xX]\s*[\d.\s()]+)+"
    r"\s*(?:=|等于|是)?\s*(?:几|多少|什么)?\s*[?？=]?$",
    re.IGNORECASE,
)
# Things people say about themselves without "I": a question or request naming them is not impersonal.
# Chinese drops the possessive ("妈妈住院了"); English says "my" (a first person already) or writes a
# parent as a name ("Mom's surgery went fine"), so a lower-case "cats" or "dad joke" is no hint.
_PERSONAL_HINT = lazy_compile(
    r"妈|爸|母亲|父亲|老婆|老公|妻子|丈夫|女朋友|男朋友|对象|儿子|女儿|孩子|宝宝|家人|爷爷|奶奶|外婆|外公|姐|妹|哥哥|弟弟|猫|狗|宠物"
    r"|医生|生病|过敏|怀孕|手术|老板|同事|工资|生日|搬家|出差|面试"
    r"|\b(?i:sick|allergic|allergy|pregnant|surgery|boss|colleague|birthday|salary|interview)s?\b"
    r"|\b(?:Mom|Mum|Mommy|Dad|Daddy|Grandma|Grandpa|Granny|Nana)\b",
)
# Asking when is not telling when: "哪一年", "what year" hold no event time of the speaker's.
_WHEN_QUESTION = lazy_compile(r"哪一?年|哪一?天|几月|几号|几点|什么时候|多少年|\b(?:when|what year|what time|which year|how long ago)\b",
                            re.IGNORECASE)
_NOT_PERSONAL_WORDS = lazy_compile(r"\bUS\b|自我介绍|(?<![\d零一二两三四五六七八九十午晨晚上下])一点儿?(?![钟半多前后左右\d零一二三四五六七八九十])")
# Weather remarks: small talk about the sky, unless the speaker is in it ("it rained on our wedding").
_WEATHER = lazy_compile(
    r"天气|下雨|下雪|下冰雹|刮风|台风|雾霾|晴天|阴天|好热|真热|太热|好冷|真冷|太冷|降温|升温|出太阳|气温|落雨|黄梅天|梅雨|火炉|闷热|好闷|热死|冷死|[0-9]+\s*度"
    r"|\b(?:weather|rain|raining|rainy|snow|snowing|snowy|sunny|sun|sunshine|windy|wind chill|cloudy|foggy|humid|muggy|drizzl\w*"
    r"|thunderstorms?|heatwave|storms?|hail|four seasons)\b"
    r"|\b(?:hot|cold|chilly|freezing|warm)\s+(?:out|outside|today|tonight|out there|in here)\b",
    re.IGNORECASE,
)
_PLAN_OR_NEED = lazy_compile(r"得|要|该|需要|带伞|取消|推迟|航班|\b(?:flight|cancel\w*|delay\w*|should|need|have to|must)\b", re.IGNORECASE)
_LETS_TALK = lazy_compile(r"^(?:我们)?(?:来)?(?:聊聊|聊一聊|说说|谈谈)|^let'?s\s+(?:talk|chat)\s+about\b", re.IGNORECASE)
# "I wonder how tall Everest is", "我想知道光速是多少": a question put as a statement of curiosity.
_WONDER = lazy_compile(r"^(?:i\s+wonder|i'?m\s+curious|i\s+was\s+wondering|do\s+you\s+know|我想知道|我很好奇|我好奇|你知道)\s*", re.IGNORECASE)
# Forget (or do-not-keep) requests, at the start of a clause; "don't forget" and "别忘了" are remember requests.
# Requests for content (a poem, a translation, a joke), with the words that say who it is for.
_REQUEST_PREFIX = lazy_compile(
    r"^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:help me\s+(?:to\s+)?)?(?:请你?|麻烦你?|能不能|可以)?(?:帮我|给我|为我|替我)?",
    re.IGNORECASE,
)
_REQUEST_VERB = lazy_compile(
    r"^(?:write|translate|tell|explain|summari[sz]e|list|generate|compose|define|describe|calculate|compute|convert"
    r"|rewrite|rephrase|paraphrase|proofread|correct|solve|give|suggest|recommend|name|brainstorm|draft|create|make|come up with)\b"
    r"(?!\s*[:：])"  # "Name: Li Wei, age 32" is a form the user fills in, not a request
    r"|^(?:用[A-Za-z0-9+#.\u4e00-\u9fff]{1,12}?)?再?(?:写|翻译|讲|解释|总结|概括|列出|列举|生成|计算|算一下|润色|改写|转换|编|实现|推荐|出几道|出一道|查出|找出|来一?个)(?![了过])"  # "写了周报": done, not asked
    r"|^给.{1,12}?(?:起|取|想|写|编|配)"
    r"|^把.{1,40}(?:翻译|改写|润色|总结|转换|换成|改成|改得|改一下|修改|精简|缩短|扩写)",
    re.IGNORECASE,
)
_FOR_ME = lazy_compile(r"帮我|给我|为我|替我|\b(?:tell|give|show|write|help|for|explain to)\s+me\b|\bme\s+(?:a|an|the|some)\b", re.IGNORECASE)
# Text operations work on the material after a colon or in quotes, which says nothing about the speaker.
_TEXT_OP = lazy_compile(
    r"\b(?:translate|rewrite|rephrase|paraphrase|proofread|correct|convert)\b|\bmake (?:this|it|that)\b.{0,40}\bsound\b"
    r"|翻译|改写|润色|转换|换成|改成|改得|改一下|修改|精简|缩短|扩写",
    re.IGNORECASE,
)
_QUOTED = lazy_compile(r"[:：].*$|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|“[^”]*”|‘[^’]*’|「[^」]*」|《[^》]*》", re.DOTALL)


@dataclass(frozen=True)
class Turn:
    """What the rules read, worked out once per turn."""

    text: str  # the user's words
    parts: list[str]  # their clauses (rules provider's splitting)
    answering: bool  # the user replies to an assistant's question
    now: str


# --- the classes ---------------------------------------------------------------------------------
def _key(clause: str) -> str:
    key = unicodedata.normalize("NFKC", clause).lower().strip(" .!?~…。！？,，'\"")
    return re.sub(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]", "", key).strip()


def _is_laughter(clause: str) -> bool:
    return bool(_LAUGHTER.match(_key(clause).replace(" ", "")))


# Words around a greeting that change nothing: "oh", "well", "haha" before; "man", "dear", "again", "for now" after.
_AROUND = lazy_compile(r"^(?:(?:oh|ah|aw+|well|ok|okay|haha+|hah|lol|hey|so)\s+)+|(?:\s+(?:man|dear|mate|buddy|bro|dude|pal|friend|again"
                     r"|then|for now|haha+|lol|too|guys|everyone|all))+$|^(?:小助手|助手|亲|老师)|(?:呀|啊|哦|呢|啦|嘛|吧|~|～)+$")


def small_talk(clause: str) -> bool:
    key = _key(clause)
    bare = _AROUND.sub("", key).strip()
    return (T.is_chitchat(clause) or _is_laughter(clause) or key in _EXTRA_CHITCHAT or key.rstrip("呀啊哦呢啦嘛吧~～ ") in _EXTRA_CHITCHAT
            or bool(bare) and bare != key and (T.is_chitchat(bare) or bare in _EXTRA_CHITCHAT))


def _filler(clause: str) -> bool:
    key = _key(clause)
    return not key or key in _FILLER_EN or all(w in _FILLER_EN for w in key.split()) or bool(_FILLER_ZH.match(key))


def personal(clause: str) -> bool:
    return T.is_personal_fact(clause) or T.is_personal_event(clause) or T.is_experience(clause)


def impersonal(text: str) -> bool:
    """Nothing about the speaker: no first person, no time word (an event), no family, pet, health or work word.
    "US" in capitals is the country and "礼貌一点" is "a bit more polite", not one o'clock."""
    text = _NOT_PERSONAL_WORDS.sub(" ", text)
    return not (T.has_first_person(text) or T.has_time_word(_WHEN_QUESTION.sub(" ", text)) or _PERSONAL_HINT.search(text))


def forget_request(t: Turn) -> bool:
    asks = [c for c in t.parts if T.FORGET.search(c)]
    return bool(asks) and not any(personal(c) for c in t.parts if c not in asks)


def laughter(t: Turn) -> bool:
    return all(_is_laughter(c) for c in t.parts)


def greeting(t: Turn) -> bool:
    """Greetings, thanks, acknowledgements and reactions, laughter among them."""
    return all(small_talk(c) for c in t.parts)


def fragment(t: Turn) -> bool:
    rest = [c for c in t.parts if not small_talk(c)]
    if all(_filler(c) for c in rest):
        return True
    text = " ".join(rest)
    return not T.substantial(text) and not re.search(r"\d", text) and impersonal(text)


def arithmetic(t: Turn) -> bool:
    return len(t.parts) == 1 and bool(_ARITHMETIC.match(t.text.strip()))


def _asked(clause: str) -> str:
    """The question inside "I wonder how tall Everest is" / "我想知道…"; other clauses as they are."""
    inner = _WONDER.sub("", clause.strip(), count=1)
    return inner if inner != clause.strip() and inner else clause


def knowledge_question(t: Turn) -> bool:
    rest = [_asked(c) for c in t.parts if not small_talk(c)]
    return bool(rest) and all(T.is_question(c) for c in rest) and impersonal(" ".join(rest)) and not states_preference(t)


def weather_remark(t: Turn) -> bool:
    """"今天天气真不错", "It's so hot out there today", "我们来聊聊今天的天气吧": the weather and small
    talk, nobody's plans or family in it (a time word is allowed: weather is always today)."""
    rest = [_LETS_TALK.sub("", c.strip(), count=1) for c in t.parts if not small_talk(c)]
    short = lambda c: len(c.split()) <= 3 and not T.HAS_CJK.search(c)  # noqa: E731  ("of course", "brutal", "classic melb")
    if not rest or not any(_WEATHER.search(c) for c in rest) or not all(_WEATHER.search(c) or short(c) for c in rest):
        return False
    text = " ".join(rest)
    return not (T.has_first_person(text) or _PERSONAL_HINT.search(text) or _PLAN_OR_NEED.search(text))


def content_request(t: Turn) -> bool:
    """"Write a haiku about the sea", "帮我写一首诗", "把这句话翻译成英文：…": "帮我"/"tell me" say who it
    is for; for a text operation (translate, proofread) the material after a colon or in quotes is what to
    work on, not about the speaker ("帮我写一封邮件：我下周请假" keeps its material and goes to the model)."""
    if states_preference(t):  # "以后都用英文回答我": how to answer for good, a preference
        return False
    body = (_QUOTED.sub(" ", t.text) if _TEXT_OP.search(t.text) else t.text).strip()
    head = _REQUEST_PREFIX.sub("", body, count=1).strip()
    if not _REQUEST_VERB.search(head):
        return False
    rest = _FOR_ME.sub(" ", body)
    return impersonal(rest) and not any(personal(c) for c in T.clauses(rest))


def states_preference(t: Turn) -> bool:
    """A clause asks the assistant to answer some way for good ("can you keep answers short?"): never skipped
    as a question or a request (text/requests.py)."""
    return prefers(t.parts)


def read_turn(turns: Sequence[dict[str, Any]], now_iso: str = "") -> Turn:
    """The user's words of these turns, their clauses, and whether they answer an assistant's question."""
    turns = [{"role": str(t.get("role", "user")), "content": str(t.get("content", ""))} for t in turns]
    text = T.user_lines(turns)
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=0)
    answering = any(t["role"] == "assistant" and T.is_question(t["content"].strip()) for t in turns[:last_user] if t["content"].strip())
    return Turn(text=text, parts=T.clauses(text), answering=answering, now=now_iso)


# Remarks about the conversation or the assistant: "you already said that", "that's not what I asked", "你刚才说错了",
# "let's change the topic". Certain only without anything about the speaker's life in them.
_ABOUT_TALK = lazy_compile(
    r"\b(?:you(?:'ve| have)? (?:already |just )?(?:said|told me|mentioned|asked|repeated|misunderstood|answered|got it wrong)"
    r"|you(?:'re| are) (?:wrong|repeating|not listening|not making sense)|that'?s (?:not what i (?:asked|meant|said)|wrong|incorrect)"
    r"|(?:your|that|this) (?:answer|reply|response|explanation) (?:is|was)|not what i (?:asked|meant)|i didn'?t ask"
    r"|let'?s (?:change the (?:topic|subject)|move on|talk about something else|get back to)|(?:try|say that) again"
    r"|(?:that'?s|this is|exactly) (?:exactly )?what i (?:needed|wanted|was looking for)|that (?:helps|helped|works)"
    r"|you (?:already |just )?(?:gave|showed|sent) me that|you mixed (?:up|them up)|stop (?:giving|sending|using)"
    r"|i don'?t understand what you mean|what do you mean|you(?:'re| are) confusing me"
    r"|(?:shorter|longer|simpler|more detail),? please|never ?mind|forget it|you lost me|can you repeat)\b"
    r"|你(?:刚才|之前|已经)?(?:说过|说错|讲过|答错|理解错|搞错|弄错|没听懂|没明白|又重复|重复了)|你说得?不对|这不是我(?:问|要|想)的|我不是(?:问|说)这个"
    r"|^let'?s (?:talk|chat) about\b|^(?:我们)?来?(?:聊聊|聊一聊|谈谈)"
    r"|你(?:根本|完全|好像)?没(?:理解|听懂|明白|看懂)|你(?:这个|的)?回答|你(?:上面|前面)说的|(?:刚刚|刚才)不是问|讲得太快|说得太快|没看懂|看不懂你"
    r"|重新说|说清楚点|矛盾了|换个话题|不说这个了|说点别的|回到(?:刚才|正题)|再说一遍|重新(?:回答|说)|简短一点|说简单点|答非所问|算了吧?$",
    re.IGNORECASE,
)
_LAUGHING = lazy_compile(r"^(?:[哈呵嘿嘻]{2,}|(?:ha|he){2,}h?|lol|lmao)[\s,，!！~]*", re.IGNORECASE)
# Reactions to what the other said ("That's amazing!", "Sounds fun", "Congrats!", "太厉害了"): praise or
# surprise with no first person and nothing more.
_REACTION = lazy_compile(
    r"^(?:wow|oh|aw+|omg|yay|ooh|whoa|ha|haha|great|awesome|amazing|cool|nice|lovely|congrats|congratulations"
    r"|that'?s|that is|it'?s|this is|sounds|looks|what a|how|so|such|good for you|well done|you'?re|you are|glad|happy for you)\b"
    r"|^(?:太|真|好|哇|厉害|恭喜|羡慕|不错|挺好|你真|你太)",
    re.IGNORECASE,
)


def remark(clause: str) -> bool:
    """A clause about the conversation or the assistant rather than about the speaker's life."""
    return bool(_ABOUT_TALK.search(clause)) and not personal(clause)


def reaction(clause: str) -> bool:
    """A short reaction ("That's so cool", "Sounds like fun", "太厉害了") that says nothing about the speaker."""
    clause = _LAUGHING.sub("", clause.strip())  # "hahaha that's hilarious", "哈哈哈你太逗了"
    words = len(re.findall(r"[A-Za-z']+", clause)) + len(T.HAS_CJK.findall(clause)) // 2
    named = re.search(r"(?<!^)\b[A-Z][a-z]+", clause.strip())  # "It's Shia Labeouf!" answers something
    return words <= 6 and bool(_REACTION.match(clause.strip())) and not T.has_first_person(clause) and not named


def conversation_remark(t: Turn) -> bool:
    """Every clause is small talk, a reaction or a remark about the conversation, and one is such a remark."""
    rest = [c for c in t.parts if not small_talk(c)]
    return any(remark(c) for c in rest) and all(remark(c) or reaction(c) or T.is_question(c) for c in rest)


# Imperatives addressed to the assistant ("plan dinner for tonight", "find me a recipe", "帮我查一下明天的航班"):
# what it is asked to do, not what the user's life is. A time word is allowed here (it says when the
# assistant's work is for), a first person or a personal word is not.
_ASK_VERB = lazy_compile(
    r"^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:plan|find|search|look up|check|show|help|pick|choose|organi[sz]e|order|sort"
    r"|fix|debug|compare|rank|schedule)\b|^(?:请你?|麻烦你?)?(?:帮我|给我)?(?:查一下|查查|找一下|找找|规划|安排一下|看看|比较一下|挑一个|选一个)",
    re.IGNORECASE,
)


def assistant_request(t: Turn) -> bool:
    """Every clause asks the assistant for something (an imperative or a question), none says anything
    about the speaker: "plan dinner for tonight", "and a dessert?"."""
    rest = [c for c in t.parts if not small_talk(c)]
    asks = [c for c in rest if _ASK_VERB.search(_FOR_ME.sub(" ", c).strip()) or _REQUEST_VERB.search(_REQUEST_PREFIX.sub("", c.strip(), count=1))]
    text = _NOT_PERSONAL_WORDS.sub(" ", " ".join(rest))
    return bool(asks) and all(c in asks or T.is_question(c) for c in rest) and not (
        T.has_first_person(_FOR_ME.sub(" ", text)) or _PERSONAL_HINT.search(text))

