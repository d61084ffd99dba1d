"""The slot reader's patterns, as data: (attribute, pattern, fixed value). A pattern names the value it reads
`v`, the value it says was left behind `old` ("moved from Portland to Denver"), and, for a pet, the subject
`subj`. `{NAME}`, `{PLACE}`, `{MONEY}`... are filled from VALUES before compiling (text/slots.py). The first
rule of an attribute that matches a clause wins, so the more specific ones come first.
"""

from __future__ import annotations

from .slot_tables import CAR_BRANDS, DRUGS, JOBS_EN, JOBS_ZH, RELATIONS


def _alts(words: tuple[str, ...] | list[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_CAP = r"[A-Z][\w'’&.-]*"
_PETS_EN = _alts([w for k in ("dog", "cat") for w in RELATIONS[k] if w.isascii()])
_PETS_ZH = _alts([w for k in ("dog", "cat") for w in RELATIONS[k] if not w.isascii()])
VALUES: dict[str, str] = {
    "NAME": rf"{_CAP}(?:\s+{_CAP})?",
    "KINDZH": r"英文名|中文名|小名|昵称|网名|外号|绰号|乳名|艺名|笔名|花名",
    "PLACE": rf"{_CAP}(?:\s+{_CAP}){{0,2}}",
    "ZHNAME": r"(?:[A-Z][a-z]+|[\u4e00-\u9fff](?:(?!不是|不叫|而是|了)[\u4e00-\u9fff]){1,3})",
    "ZHPLACE": r"[\u4e00-\u9fffA-Za-z]{2,10}",
    "ZHORG": r"[\u4e00-\u9fffA-Za-z0-9&]{2,12}?",
    "MONEY": r"[$¥€£]?\s?\d[\d,]*(?:\.\d+)?\s?(?:[kK]\b|万|千|元|块|美元|dollars\b|bucks\b|rmb\b|RMB\b|yuan\b)?",
    "ZHNUM": r"(?:\d{1,3}|[零一二两三四五六七八九十]{1,4})",
    "JOBS": _alts(JOBS_EN),
    "JOBSZH": _alts(JOBS_ZH),
    "CARS": _alts(CAR_BRANDS),
    "DRUGS": _alts(DRUGS),
    "PETS": _PETS_EN,
    "PETSZH": _PETS_ZH,
}
_NOT_UNIT = (r"(?![\d.,:%])(?!\s*(?i:k\b|%|dollars|bucks|minutes?|mins?|hours?|days?|weeks?|months?|miles?|km|kg|lbs?"
             r"|pounds|cm|feet|ft|am\b|pm\b|percent|times|people|grand|o'clock|th\b|st\b|nd\b|rd\b))")
_NOW = r"(?:\s+(?i:now|these days|nowadays|currently)\b|\s*$)"

RULES: list[tuple[str, str, str | None]] = [
    # the pet's own name: its subject is the pet
    ("name", r"(?i:\b(?:my|our|the user's)\s+)(?P<subj>(?i:{PETS}))(?:'s name is|,?\s+(?i:named|called|is called|is named)|,)?\s+"
             r"(?P<v>[A-Z][a-z]+)\b", None),
    ("name", r"(?:我|我们|用户)(?:的|家)?(?:的)?(?P<subj>{PETSZH})(?:的名字)?(?:叫做|名叫|叫|是)(?P<v>{ZHNAME})", None),
    # "I have a cat called Mochi", "we adopted a puppy named Rex": the pet's name, never the user's
    ("name", r"(?i:\b(?:have|has|got|adopted|own|owns)\s+(?:a|an)\s+(?:[a-z]+\s+)?)(?P<subj>(?i:{PETS}))(?:,)?\s+"
             r"(?i:called|named)\s+(?P<v>[A-Z][a-z]+)\b", None),
    # a name of a kind ("my English name is Fiona", "我英文名叫Fiona", "小名叫妞妞"): another name, not the name
    ("alias", r"(?i:\bmy\s+(?:english|chinese|nick|middle|pen|stage|screen|user|online)\s?name(?:'s| is))\s+(?P<v>{NAME})", None),
    ("alias", r"(?:{KINDZH})(?:字)?(?:是|叫做|叫)(?P<v>{ZHNAME})", None),
    ("name", r"(?i:\bmy name(?:'s| is)|\bname's|\bcall me|\bi'?m called|\bi am called|\bi go by|\bname is)\s+(?P<v>{NAME})", None),
    ("name", r"(?:名字(?:是|叫)|(?<![不别])叫(?:做)?)(?P<v>{ZHNAME})", None),
    ("age", r"(?i:\bi'?m|\bi am|\bhe'?s|\bshe'?s|\bhe is|\bshe is|\bis|\bturned|\bturn|\bage|\baged|\bwe'?re)\s+"
            r"(?:(?i:now|already|just|only)\s+)?(?P<v>\d{1,3})" + _NOT_UNIT, None),
    ("age", r"(?P<v>\d{1,3})\s*(?i:years? old|yrs? old|y/o)\b", None),
    ("age", r"(?P<v>{ZHNUM})\s*(?:周岁|岁)", None),
    ("age", r"今年(?P<v>\d{1,3})(?!\d|年|月|号|点|块|元)", None),
    ("home", r"(?i:\bmoved|\brelocated)\s+(?i:from)\s+(?P<old>{PLACE})\s+(?i:to)\s+(?P<v>{PLACE})", None),
    ("home", r"(?i:\blive|\blives|\bliving|\breside|\bresides|\bbased|\bmoved|\brelocated|\bhome is|\bhouse is|\bapartment is|"
             r"\bflat is|\bmoved back)(?:\s+(?i:now|here|back))?\s+(?i:in|to|at|near)\s+(?:(?i:the)\s+)?(?P<v>{PLACE})", None),
    ("home", r"(?i:\bi'?m|\bi am|\bwe'?re|\bwe are)\s+(?i:now|currently)\s+(?i:in|based in|living in)\s+(?P<v>{PLACE})", None),
    ("home", r"(?i:\bi'?m|\bi am|\bwe'?re|\bwe are)\s+(?i:in|based in|living in)\s+(?P<v>{PLACE})(?=\s+(?i:now|these days|nowadays)\b)", None),
    ("home", r"从(?P<old>{ZHPLACE}?)搬(?:到|去|回)了?(?P<v>{ZHPLACE})", None),
    ("home", r"(?:住在|家在|家住|住|搬到了?|搬去了?|搬回了?|定居(?:在)?|落户(?:在)?|现在在|目前在|人在)(?P<v>{ZHPLACE})", None),
    ("home", r"在(?P<v>@city)", None),
    ("employer", r"(?i:\bworks?|\bworking|\bworked)\s+(?i:at|for)\s+(?P<v>{PLACE})", None),
    ("employer", r"(?i:\bjob|\bposition|\brole|\bgig)\s+(?i:at|with)\s+(?P<v>{PLACE})", None),
    ("employer", r"(?i:\bjoined|\bstarted at|\bemployed by|\bemployed at|\bhired by|\bhired at|\bswitched to)\s+(?P<v>{PLACE})", None),
    ("employer", r"(?i:\bi'?m|\bi am|\bwe'?re)\s+(?:(?i:now|currently)\s+)?(?i:at|with)\s+(?P<v>{PLACE})" + _NOW, None),
    ("employer", r"(?i:\bleft|\bquit|\bresigned from|\bexited)\s+(?:(?i:my job at|my job with|my position at|my role at)\s+)?(?P<old>{PLACE})", None),
    ("employer", r"(?:在|于)(?P<v>{ZHORG})(?:工作|上班|任职|实习|干活|打工|做事)", None),
    ("employer", r"(?:入职了?|加入了?|跳槽到了?|跳到了?|进了)(?P<v>{ZHORG})(?=$|[，。,\s]|了|工作|上班|做)", None),
    ("employer", r"(?:离开了?|从)(?P<old>{ZHORG})(?:离职|辞职|出来)", None),
    ("employer", r"离开了(?P<old>{ZHORG})$", None),
    ("employer", r"在(?P<v>@company)", None),
    ("job", r"(?i:\bas an?|\bi'?m an?|\bi am an?|\bi'?m now an?|\bi am now an?|\bwork as an?|\bjob is|\bhe'?s an?|\bshe'?s an?|\bis an?)\s+"
            r"(?P<v>(?:[\w-]+\s+){{0,2}}?(?i:{JOBS})s?)\b", None),
    ("job", r"(?:我是|当了?|做|担任|职位是|现在是)(?:一名|一个|个|名)?(?P<v>[\u4e00-\u9fff]{{0,4}}?(?:{JOBSZH}))", None),
    ("school", r"(?i:\bstud(?:y|ying|ies)\s+at|\bstudent at|\benrolled (?:at|in)|\battend(?:s|ing)?)\s+(?P<v>{PLACE})", None),
    ("income", r"(?i:\bi make|\bi earn|\bi'?m making|\bi get paid|\bmy salary is|\bsalary (?:is|of|went up to|is now)|\bincome is|"
               r"\bi take home)\s+(?:(?i:about|around|roughly|now)\s+)?(?P<v>{MONEY})", None),
    ("income", r"(?:月薪|年薪|工资|薪水|收入)(?:是|有|涨到了?|变成了?|降到了?|现在是|大概|税后|税前)*(?P<v>{MONEY})", None),
    ("rent", r"(?i:\bpay)\s+(?P<v>{MONEY})\s+(?:(?i:a month|per month|monthly)\s+)?(?i:in|for) rent", None),
    ("rent", r"(?i:\brent)\b[^.,;\d]{0,30}?(?P<v>{MONEY})", None),
    ("rent", r"(?P<v>{MONEY})\s+(?:(?i:a month|per month|monthly)\s+)?(?i:for|in) (?:(?i:the )?)rent", None),
    ("rent", r"(?:房租|月租)[^，。,\d]{0,8}?(?P<v>{MONEY})", None),
    ("amount", r"(?i:\bsettled on|\bsettled at|\bagreed on|\bagreed to|\blanded on|\bended up at|\bended up with|\bwent with|"
               r"\bcame down to|\bnegotiated (?:it )?(?:down )?to|\bknocked it down to|\bfinal (?:number|price|figure) (?:is|was))\s+(?P<v>{MONEY})", None),
    ("amount", r"(?:最后|最终)?(?:定在了?|谈到了?|谈成了?|降到了?|砍到了?|定了|谈妥了?|成交价是?)(?P<v>{MONEY})", None),
    ("diet", r"(?i:\bi eat meat again|\bback to eating meat|\bstarted eating meat|\beat meat again)", "omnivore"),
    ("diet", r"(?i:\bstopped being|\bquit being|\bgave up being)\s+(?:an?\s+)?(?P<old>(?i:vegetarian|vegan|pescatarian|keto))", None),
    ("diet", r"(?i:\bi'?m|\bi am|\bi'?ve gone|\bi went|\bi became|\bwe'?re|\bhe'?s|\bshe'?s|\bturned|\bgone)\s+"
             r"(?:(?i:now|fully|strictly|mostly|a|an)\s+){{0,2}}(?P<v>(?i:vegetarian|vegan|pescatarian|keto|paleo|carnivore|flexitarian))", None),
    ("diet", r"(?:开始吃肉|又吃肉|重新吃肉)", "omnivore"),
    ("diet", r"(?P<v>吃全素|吃纯素|素食主义者|素食者|吃素)", None),
    ("allergy", r"(?i:\ballergic to)\s+(?P<v>[a-z][a-z ]{{1,25}}?)(?=$|[,.;!]|\s+(?i:and|but|now|anymore|too|as well)\b)", None),
    ("allergy", r"对(?P<v>[\u4e00-\u9fffA-Za-z]{{1,8}}?)过敏", None),
    ("medication", r"(?i:\bi take|\bi'?m taking|\bi'?m on|\bi am on|\bprescribed|\bstarted taking|\bswitched to|\btaking)\s+(?P<v>(?i:{DRUGS}))", None),
    ("medication", r"(?:吃|服用|在吃|开始吃)(?P<v>(?:{DRUGS}))", None),
    ("vehicle", r"(?i:\bi drive|\bwe drive|\bi own|\bmy car is|\bi bought|\bwe bought|\bi'?m driving|\bdrive)\s+"
                r"(?:(?i:an?|the|my|our|new|used)\s+){{0,2}}(?P<v>(?:{CARS})(?:\s+[A-Z0-9][\w-]*)?)", None),
    ("vehicle", r"(?:开|开的是|买了|换了)(?:一辆|辆|台)?(?P<v>(?:{CARS})[A-Za-z0-9\u4e00-\u9fff]{{0,4}})", None),
    ("relationship", r"(?i:\bi'?m|\bi am|\bi got|\bwe got|\bwe'?re|\bwe are|\bgot)\s+(?:(?i:now|newly|recently|just|happily)\s+)?"
                     r"(?P<v>(?i:single|married|engaged|divorced|separated|widowed))\b", None),
    ("relationship", r"我(?:已经|刚|现在|还是)?(?P<v>单身|结婚了|已婚|离婚了|订婚了)", None),
    ("phone", r"(?i:\bmy (?:phone number|phone|cell|mobile|number)(?:'s| is)(?: now)?)\s+(?P<v>\+?\d[\d\s().-]{{5,}}\d)", None),
    ("phone", r"(?:手机号码|手机号|手机|电话号码|电话)(?:是|换成了?|改成了?)(?P<v>\+?\d[\d\s-]{{5,}}\d)", None),
    ("email", r"(?i:\bmy (?:email|e-mail)(?: address)?(?:'s| is)(?: now)?)\s+(?P<v>[\w.+-]+@[\w-]+\.[\w.]+)", None),
    ("email", r"(?:邮箱|电子邮件)(?:地址)?(?:是|换成了?|改成了?)(?P<v>[\w.+-]+@[\w-]+\.[\w.]+)", None),
    ("schedule", r"(?i:\bi work|\bi'?m on|\bi am on|\bmy shift is|\bswitched to|\bi'?m working)\s+(?:(?i:the|now)\s+)?"
                 r"(?P<v>(?i:night shifts?|day shifts?|morning shifts?|evening shifts?|nights|days|weekends))\b", None),
    ("schedule", r"(?:上|是|换成了?|改上)(?P<v>夜班|白班|早班|晚班)", None),
    ("answer_language", r"(?i:\b(?:answer|reply|respond|talk|speak|write)(?: to me)?(?: only)? in)\s+"
                        r"(?P<v>(?i:english|chinese|mandarin|spanish|french|german|japanese|korean))", None),
    ("answer_language", r"用(?P<v>中文|英文|英语|汉语|普通话)(?:回答|回复|跟我说|和我说|说|聊)", None),
    ("answer_length", r"(?i:\bkeep (?:your |the )?(?:answers|replies|responses)(?: more)?)\s+(?P<v>(?i:short|brief|concise|detailed|long))", None),
    ("answer_length", r"(?i:\b(?:prefer|like|want|give me))\s+(?P<v>(?i:short|brief|concise|detailed|long|longer))\s+(?i:answers|replies|responses)", None),
    ("answer_length", r"回答(?:得)?(?:要)?(?P<v>简短|简洁|详细)", None),
    ("answer_length", r"(?P<v>简短|简洁|详细)(?:一点|些)?(?:地)?回答", None),
]

# A clause about a place or things in general, not about anyone: "The rent in Paris is 2000", "the rent here is
# crazy", "Rent in London is 2500", "A new bike costs 500" (not "The rent for the new place": the user's),
# "北京的房租是6000" (a city of the gazetteer: "新房子的房租" is the user's), "这边的房租太贵了". With no subject named (no first person) it states no one's slot, and a
# bare figure after it ("3000 for a studio") is not the user's either.
IMPERSONAL = (r"^(?:a|an|average|typical)\s|^(?:the\s+)?(?:average\s+|typical\s+)?(?:rents?|prices?|housing|salar(?:y|ies)|wages?"
              r"|cost of living|houses?|apartments?|flats?)\s+(?:in|around|here|there)\b"
              r"|^(?:这里|这边|那里|那边|当地|市区)|^(?P<place>[\u4e00-\u9fffA-Za-z]{1,8})的(?=房租|租金|房价|价格|工资|薪水)")
