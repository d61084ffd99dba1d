"""Which common slot a question asks about, and which slots a statement states: cues, in one table.

Why (issue 55): the embedding matches the words of a question, not what it asks for. "Where do I work?"
found "I'm learning Spanish on Duolingo every morning before work" and "ugh, work was so long today"
above "I'm a nurse on the cardiology ward"; "我是做什么工作的？" found a remark about the mother's
cataract surgery; "What's our cat's name?" missed "our ragdoll Mochi", which never says "cat". A person
reads "where do I work" as asking for an employer or a job, and "I work at X as Y" or "我是一名数学老师"
as stating one. So each slot below has question cues and statement cues, in English and Chinese, and
the answer stage (stages.py) gives a candidate that states a slot the question asks a bounded bonus.
A cue in either language serves a question in the other: "我们房租多少？" asks the rent, and
"We pay £950 a month rent" states it.

These are cues, not a reader, and no value is extracted. The slot names are the slot reader's
(text/slot_tables.py: `job` and `employer`, `home`, `name`, `alias`, `age`, `diet`, `allergy`, `rent`, `vehicle`;
`boss` is one of its relations, `cat` and `dog` its pets) plus two it has no attribute for (`birthday`,
`hometown`). A question's cues are the only reading of what it asks; a statement's cues (`stated`) are the
answer stage's fallback for a record without the reader's statements (`metadata["statements"]`: written
before slots, or a text the narrow reader finds nothing in, such as "We have a golden retriever called Max").

Pure functions of the text; the table is data: slot -> (question cue, statement cue).
"""

from __future__ import annotations

import re
from functools import lru_cache

_I = re.IGNORECASE

# Words that name a cat or a dog without saying "cat" / "dog": breeds and nicknames.
_CAT = r"cats?|kitten|kitty|tabby|ragdoll|siamese|persian|maine coon|british shorthair|sphynx|bengal|猫|猫咪|英短|美短|布偶|橘猫|暹罗|加菲|狸花"
_DOG = (r"dogs?|pupp(?:y|ies)|pup|retriever|labrador|lab|poodle|corgi|beagle|collie|husky|terrier|spaniel|bulldog|greyhound|dachshund|"
        r"schnauzer|shiba|pug|狗|狗狗|金毛|柯基|泰迪|哈士奇|拉布拉多|柴犬|边牧|比熊|博美|萨摩|二哈")
_NAMED = r"(?:called|named|name is|name's|叫|名叫|名字)"
_OCCUPATION = (r"nurse|teacher|doctor|engineer|developer|programmer|designer|accountant|lawyer|analyst|manager|consultant|chef|cook|"
               r"plumber|electrician|writer|journalist|editor|architect|pharmacist|dentist|vet|paramedic|scientist|researcher|"
               r"professor|lecturer|librarian|barista|waiter|waitress|cashier|driver|pilot|mechanic|carpenter|photographer|"
               r"student|intern|freelancer|sous chef|chef de partie|software \w+|data \w+|product \w+")
_ZH_OCCUPATION = (r"老师|教师|医生|护士|工程师|程序员|设计师|会计|律师|分析师|经理|顾问|厨师|司机|记者|编辑|销售|运营|产品|研究员|"
                  r"教授|公务员|警察|学生|实习生|药剂师|建筑师|主管|店长|客服|翻译")

# slot -> (question cue, statement cue). A question may ask several slots ("what pet do we have": pet).
SLOTS: dict[str, tuple[str, str]] = {
    "job": (
        r"\bwhere (?:do|does|did) (?:i|we|you) work\b|\bwhat (?:do|does|did) (?:i|you|he|she|they|my \w+|[a-z]+'s \w+) do\b(?! (?:at|on|for fun|in (?:my|his|her) free|last|yesterday|today|this|next))|\bfor a living\b"
        r"|\bmy (?:job|occupation|profession|employer|work)\b|\bwhat(?:'s| is) (?:my|your) (?:job|line of work)\b|\bwho do i work for\b"
        r"|\bwhich company\b|做什么工作|做什么的|干什么的|什么工作|职业|在哪(?:里|儿|家公司)?(?:上班|工作)|哪家公司|什么单位",
        rf"\b(?:i'm|i am|is|he's|she's|was|used to be) (?:a|an|the) (?:[\w-]+ ){{0,2}}(?:{_OCCUPATION})\b|\bi work (?:at|for|as|in)\b|\bwork(?:ing)? as (?:a|an)\b"
        rf"|\bworks? (?:at|for|as)\b|\bi(?:'m| am) employed\b|\bmy (?:job|role|position) (?:is|as|at)\b|\bi(?:'m| am) (?:a |an )?(?:{_OCCUPATION}) (?:at|for|in)\b"
        rf"|(?:是|当)(?:一名|一个|一位|个)?[^，,。]{{0,10}}(?:{_ZH_OCCUPATION})|在[^，,。]{{1,15}}(?:工作|上班|做|当)|我(?:的工作|的职业)是"
        rf"|^(?:我是)?[^，,。我]{{0,6}}(?:{_ZH_OCCUPATION})，",
    ),
    "home": (
        r"\bwhere (?:do|does|did) (?:i|we|you) live\b|\bwhere(?:'s| is) (?:my|our) (?:home|flat|house|apartment)\b|\bmy address\b"
        r"|\bwhich (?:city|town|neighbou?rhood)\b.{0,20}\blive|住在?哪|住哪|家在哪|哪个城市|住址|住的地方",
        r"\b(?:i|we) (?:live|moved|rent|settled)\b(?! (?:for|to be))|\b(?:i|we)(?:'re| are) based in\b|\bmy (?:home|flat|apartment|house) is\b"
        r"|(?:我|我们|我家)(?:现在)?(?:住在|住|搬到|在[^，,。]{1,10}住)|家在|定居",
    ),
    "name": (
        r"\bwhat(?:'s| is) my name\b|\bwhat am i called\b|我叫什么|我的名字|我姓什么",
        r"\bmy name(?:'s| is)\b|\bi(?:'m| am) called\b|\bcall me\b|^我叫|我的名字(?:是|叫)|我姓",
    ),
    "alias": (
        r"\bmy (?:english|chinese|nick|middle|pen|stage|screen|user|online) ?name\b|\bnickname\b|英文名|中文名|小名|昵称|网名|外号|绰号|乳名|艺名|笔名|花名",
        r"\bmy (?:english|chinese|nick|middle|pen|stage|screen|user|online) ?name(?:'s| is)\b|\bnickname\b|(?:英文名|中文名|小名|昵称|网名|外号|绰号|乳名|艺名|笔名|花名)(?:字)?(?:是|叫)",
    ),
    "cat": (
        rf"\b(?:cat|kitten|kitty)(?:'s|s)?\b.{{0,12}}\b(?:name|called|named|breed|kind)\b|\b(?:name|kind|breed) of (?:my|our|the) cat"
        rf"|\bwhat (?:kind of |breed of )?cat\b|猫[^，,。？?]{{0,6}}(?:{_NAMED}|什么|品种|几岁)|什么猫",
        rf"(?:\b(?:{_CAT})\b|猫|英短|美短|布偶|暹罗|狸花).{{0,30}}{_NAMED}|{_NAMED}.{{0,20}}(?:\b(?:{_CAT})\b|猫)"
        rf"|\b(?:my|our)\s+(?:\w+\s+)?(?:{_CAT})\s+[A-Z]|(?:我|我们|家里|家)[^，,。]{{0,6}}(?:养了?|有)[^，,。]{{0,6}}(?:猫|英短|美短|布偶|暹罗|狸花)",
    ),
    "dog": (
        rf"\b(?:dog|puppy|pup)(?:'s|s)?\b.{{0,12}}\b(?:name|called|named|breed|kind)\b|\b(?:name|kind|breed) of (?:my|our|the) dog"
        rf"|\bwhat (?:kind of |breed of )?dog\b|狗[^，,。？?]{{0,6}}(?:{_NAMED}|什么|品种|几岁)|什么狗",
        rf"(?:\b(?:{_DOG})\b|狗|金毛|柯基|泰迪|哈士奇|柴犬|边牧).{{0,30}}{_NAMED}|{_NAMED}.{{0,20}}(?:\b(?:{_DOG})\b|狗)"
        rf"|\b(?:my|our)\s+(?:\w+\s+)?(?:{_DOG})\s+[A-Z]|(?:我|我们|家里|家)[^，,。]{{0,6}}(?:养了?|有)[^，,。]{{0,6}}(?:狗|金毛|柯基|泰迪|哈士奇|柴犬|边牧)",
    ),
    "pet": (
        r"\bpets?\b|宠物|养了?什么",
        rf"(?:\b(?:{_CAT}|{_DOG}|rabbit|hamster|parrot|turtle|tortoise|fish)\b|猫|狗|兔|仓鼠|鹦鹉|乌龟|金毛|柯基|布偶|英短).{{0,30}}{_NAMED}"
        r"|(?:我|我们|家里|家)[^，,。]{0,6}养了?",
    ),
    "age": (
        r"\bhow old\b|\bmy age\b|\bwhat age\b|几岁|多大了?(?:[?？]|$)|今年多大|年龄|多少岁",
        r"\b(?:i'm|i am|is|he's|she's|turned|turns|turn) (?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b"
        r"(?!\s*(?:kg|cm|lb|st|%|am|pm|:|\.\d|'|o'clock|minutes|hours|feet|foot|inches|months|weeks|days|times))|\b\d{1,2} years? old\b|\bi turn(?:ed)? \d{1,2}\b|\bborn in (?:19|20)\d\d\b"
        r"|\d{1,3}岁|今年\d{1,2}|属[鼠牛虎兔龙蛇马羊猴鸡狗猪]",
    ),
    "diet": (
        r"\b(?:diet|dietary|food restrictions?|vegetarian|vegan|pescatarian)\b|\b(?:can't|cannot|don't|do not|doesn't|never) (?:i |we )?eat\b"
        r"|\bcan (?:i|we|he|she) eat\b|忌口|吃素|不吃|不能吃|饮食",  # not "eat" alone: "why am I eating less sugar?" asks a reason
        r"\b(?:vegetarian|vegan|pescatarian|halal|kosher|gluten|lactose|intolerant|keto)\b|\bdon'?t eat\b|\bdo not eat\b|\bnever eat\b"
        r"|吃素|素食|不吃|忌口|清真|回民|乳糖不耐",
    ),
    "allergy": (
        r"\ballerg(?:y|ies|ic)\b|过敏",
        r"\ballerg(?:y|ies|ic)\b|过敏",
    ),
    "birthday": (
        r"\bbirthday\b|\bwhen was i born\b|生日|哪天出生|几月几号出生",
        r"\bbirthday\b|\bborn on\b|生日|出生",
    ),
    "boss": (
        r"\b(?:boss|manager|supervisor|line manager|principal|head chef|department head)\b|老板|领导|上司|主管|校长|主任|主厨|经理",
        r"\b(?:boss|manager|supervisor|principal|head chef|department head|head of \w+)\b.{0,12}\b(?:is|'s|called|named)\b"
        r"|(?:老板|领导|上司|主管|校长|主任|主厨|我的经理)[^，,。]{0,4}(?:叫|是|姓)",
    ),
    "rent": (
        r"\brent\b|房租|租金",
        r"\brent\b.{0,40}\d|\d.{0,40}\brent\b|房租|租金|押一付",
    ),
    "vehicle": (
        r"\bwhat (?:car|vehicle)\b|\bmy car\b|\bdo (?:i|we) drive\b|什么车|开的车|哪辆车",
        r"\b(?:i|we) drive\b|\bmy car(?:'s| is)\b|\bour car\b|开(?:一辆|的是|着)|我的车|我们的车",
    ),
    "hometown": (
        r"\bwhere (?:am i|are we) from\b|\bwhere did (?:i|we) grow up\b|\bhome ?town\b|哪里人|哪儿人|老家|家乡|在哪长大",
        r"\bi(?:'m| am) (?:originally )?from\b|\bgrew up\b|\bborn and raised\b|\bmy home ?town\b|我是[^，,。]{1,8}人|老家|家乡|长大",
    ),
}

_QUESTION = {slot: re.compile(q, _I) for slot, (q, _) in SLOTS.items()}
_STATEMENT = {slot: re.compile(s, _I) for slot, (_, s) in SLOTS.items()}
# A pet question about a named kind asks that kind: "our cat's name" is not answered by the dog.
_NARROWER = {"cat": "pet", "dog": "pet"}
# One cue, two of the slot reader's attributes: "where do I work" asks the employer or the job, and
# "I work at X as Y" states either.
_ALSO = {"job": "employer"}
# The slots that are the slot reader's pets (its statements' subjects, text/slot_tables.PETS), not attributes.
PETS = frozenset({"cat", "dog", "pet"})


def asked(question: str) -> frozenset[str]:
    """The slots a question asks about (empty for most questions), by the slot reader's attribute names."""
    found = {slot for slot, cue in _QUESTION.items() if cue.search(question)}
    found -= {_NARROWER[s] for s in found if s in _NARROWER}
    return frozenset(found | {_ALSO[s] for s in found if s in _ALSO})


@lru_cache(maxsize=8192)
def stated(text: str) -> frozenset[str]:
    """The slots a statement states by its cues (a cat or dog also states a pet): the fallback for a record
    without the slot reader's statements (answer.py)."""
    found = {slot for slot, cue in _STATEMENT.items() if cue.search(text)}
    return frozenset(found | {_NARROWER[s] for s in found if s in _NARROWER} | {_ALSO[s] for s in found if s in _ALSO})
