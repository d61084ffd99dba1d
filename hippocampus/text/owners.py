"""Whose fact a clause states (issue 55): the user's own, or a relative's, a friend's or a pet's.

"我爸去年做了心脏支架，现在每天吃阿司匹林" says that the father takes aspirin; "我老公叫李明，是一名建筑设计师"
that the husband is the architect. A clause cut off such a sentence must keep its subject ("我老公是一名
建筑设计师", never "我是一名建筑设计师"), and a fact distilled from it stays the other person's ("用户的老公是一名
建筑设计师") or is not distilled at all. Pattern rules in both languages, no understanding: the subject at the
start of a clause (after a lead word such as "其实", "actually"), read in one table of relations.
"""

from __future__ import annotations

import re

from .lazy import lazy_compile

# Who a user speaks of: family, partners, friends, people at work and pets (longest first where one holds another).
RELATIONS_ZH = (
    "爸爸|妈妈|爸|妈|父亲|母亲|老爸|老妈|老公|老婆|丈夫|妻子|爱人|先生|太太|媳妇|女朋友|男朋友|女友|男友|对象|未婚夫|未婚妻"
    "|儿子|女儿|孩子|宝宝|闺女|大儿子|小儿子|大女儿|小女儿|哥哥|姐姐|弟弟|妹妹|哥|姐|弟|妹|爷爷|奶奶|外公|外婆|姥姥|姥爷"
    "|叔叔|阿姨|舅舅|舅妈|姑姑|姨妈|伯伯|表哥|表姐|表弟|表妹|堂哥|堂姐|堂弟|堂妹|岳父|岳母|公公|婆婆|侄子|侄女|外甥|外甥女"
    "|孙子|孙女|朋友|好朋友|闺蜜|好友|发小|兄弟|室友|舍友|同事|老板|领导|上司|同学|邻居|导师|家人|亲戚"
    "|猫咪|猫|狗狗|狗|小狗|小猫|宠物|兔子|鹦鹉|仓鼠|金鱼|乌龟"
)
RELATIONS_EN = (
    r"dad|father|mom|mum|mother|mommy|husband|wife|partner|spouse|fianc[ée]e?|boyfriend|girlfriend|son|daughter|kids?|children|child"
    r"|baby|toddler|brother|sister|siblings?|grandma|grandmother|grandpa|grandfather|granny|nana|uncle|aunt|cousin|nephew|niece"
    r"|in-laws?|mother-in-law|father-in-law|friend|best friend|buddy|roommate|flatmate|housemate|colleague|coworker|co-worker"
    r"|boss|manager|neighbou?r|classmate|teammate|mentor|therapist|dog|puppy|cat|kitten|pet|parrot|rabbit|bunny|hamster|horse|fish"
    r"|parents|grandparents|family"
)
_LEAD_ZH = r"(?:其实|另外|对了|还有|而且|然后|不过|告诉你|顺便说一下)?"
_LEAD_EN = r"(?:(?:actually|well|so|oh|btw|by the way|also|and|but|plus|anyway|now)\b[\s,]*)*"
# "我老公", "我的猫", "我家的狗", "我们家的猫豆豆", "我好朋友", "我大学同学": a first person that only owns the subject.
_KIN_MOD = r"(?:好|最好的|大学|高中|初中|小学|研究生|大|小|二|前|亲|新|老|两个|一个)?"
_OTHER_ZH = lazy_compile(rf"^{_LEAD_ZH}(?:我|咱)(?:们)?(?:的|家的?|家里的)?{_KIN_MOD}(?:{RELATIONS_ZH})")
_PRONOUN_ZH = lazy_compile(rf"^{_LEAD_ZH}(?:他|她|它)(?:们)?(?!们?的?(?:说|觉得|认为))")
_SELF_ZH = lazy_compile(rf"^{_LEAD_ZH}我(?!们)")
# "my husband", "my best friend Tom", "our dog Biscuit", "my mom's", "he", "she".
_OTHER_EN = lazy_compile(rf"^{_LEAD_EN}(?:my|our)\s+(?:(?:older|younger|little|big|baby|twin|oldest|youngest|eldest|late|ex|step|"
                         rf"best|old|new|college|childhood|work|three|two|\w+-year-old)[\s-]+)*(?:{RELATIONS_EN})\b", re.IGNORECASE)
_PRONOUN_EN = lazy_compile(rf"^{_LEAD_EN}(?:he|she|they|he's|she's|they're|his|her|their)\b", re.IGNORECASE)
_SELF_EN = lazy_compile(rf"^{_LEAD_EN}(?:i|i'm|i've|i'd|i'll|my|me)\b", re.IGNORECASE)


def subject_zh(clause: str) -> str:
    """The subject a Chinese clause opens with, as written ("我老公", "我", "她"); "" when it opens with
    none of these (a name, a noun, or no subject)."""
    c = clause.strip()
    for pattern in (_OTHER_ZH, _PRONOUN_ZH, _SELF_ZH):
        m = pattern.match(c)
        if m:
            return re.sub(f"^{_LEAD_ZH}", "", m.group(0))
    return ""


def other_owner(clause: str) -> str:
    """The third party a clause is about ("我老公", "my dog", "she"), or "" when it is the user's own or
    opens with no subject these rules know. "我的名字", "my job", "my birthday" are the user's."""
    c = clause.strip()
    for pattern in (_OTHER_ZH, _PRONOUN_ZH, _OTHER_EN, _PRONOUN_EN):
        m = pattern.match(c)
        if m:
            return m.group(0).strip()
    return ""


def about_user(clause: str) -> bool:
    """The clause opens with the user as its subject ("我是…", "I work…", "my name is…")."""
    c = clause.strip()
    return not other_owner(c) and bool(_SELF_ZH.match(c) or _SELF_EN.match(c))


# A fact written about the user ("用户是…", "The user is…"), not about someone of the user's ("用户的老公…").
_USER_FACT = lazy_compile(r"^\s*(?:用户(?!的|家)|the user\b(?!'s)|the user's (?:name|job|home|age|birthday|favou?rite)\b)", re.IGNORECASE)


def states_user(fact: str) -> bool:
    """A distilled fact whose subject is the user himself."""
    return bool(_USER_FACT.match(fact))


_THIRD_ZH = lazy_compile(r"[他她它]")
_THIRD_EN = lazy_compile(r"\b(?:he|she|him|her|his|hers|they|them|their)\b", re.IGNORECASE)
_FIRST = lazy_compile(r"我(?![们爸妈老家的])|\b(?:i|i'm|i've|me|myself)\b", re.IGNORECASE)


def about_other(clause: str) -> bool:
    """The clause is about someone else: it opens with them ("我老公…", "my dad…", "she…"), or speaks of a third
    person and not of the user ("医生给她开了氨氯地平", "the vet put him on a diet")."""
    c = clause.strip()
    return bool(other_owner(c)) or (bool(_THIRD_ZH.search(c) or _THIRD_EN.search(c)) and not _FIRST.search(c))


RELATION_WORD = lazy_compile(rf"(?:{RELATIONS_ZH})|\b(?:{RELATIONS_EN})\b", re.IGNORECASE)


def owners_by_clause(clauses: list[str]) -> list[bool]:
    """For each clause, whether it is about someone else; a clause with no subject of its own ("每天要吃一片"
    after "医生给她开了氨氯地平") belongs to the one before it."""
    out, prev = [], False
    for c in clauses:
        own = about_other(c)
        prev = own if own or about_user(c) else prev
        out.append(prev)
    return out
