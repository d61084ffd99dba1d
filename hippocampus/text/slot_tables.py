"""The data of the slot reader (text/slots.py), kept apart from its code: the attributes and their policy
(one table), who a statement can be about, the words that mark a value taken back, and a small bilingual
gazetteer so that "Nanjing" and "南京" compare equal. Extending the reader to a new city, company, relation
or job is an edit here, never in the rules.
"""

from __future__ import annotations

from typing import NamedTuple


class Policy(NamedTuple):
    """How one attribute behaves. `single`: a new value replaces the old one (a home, an age); a multi-valued
    attribute (allergies, medications) loses a value only when the user takes that value back. `user_only`:
    always the user's (or the household's) own, whoever the clause names first ("my landlord raised the rent")."""

    single: bool = True
    user_only: bool = False
    money: bool = False


# The policy table: every attribute the reader knows.
ATTRIBUTES: dict[str, Policy] = {
    "name": Policy(),
    "alias": Policy(single=False),  # an English name, a nickname, 小名: beside the name, never replacing it
    "age": Policy(),
    "home": Policy(),
    "employer": Policy(),
    "job": Policy(),
    "school": Policy(),
    "income": Policy(money=True),
    "rent": Policy(user_only=True, money=True),
    "price": Policy(money=True),
    "amount": Policy(money=True),  # a bare new figure ("we settled on 6650"): it fills the money slot it follows
    "diet": Policy(),
    "allergy": Policy(single=False),
    "medication": Policy(single=False),
    "vehicle": Policy(),
    "relationship": Policy(),
    "phone": Policy(),
    "email": Policy(),
    "schedule": Policy(),
    "answer_language": Policy(user_only=True),
    "answer_length": Policy(user_only=True),
}

# Who a statement is about, besides the user: a relation (its words in both languages) or a pet.
RELATIONS: dict[str, tuple[str, ...]] = {
    "husband": ("husband", "hubby", "老公", "丈夫", "先生"),
    "wife": ("wife", "老婆", "妻子", "太太", "媳妇", "爱人"),
    "partner": ("partner", "fiance", "fiancé", "fiancee", "fiancée", "未婚夫", "未婚妻"),
    "boyfriend": ("boyfriend", "男朋友", "男友"),
    "girlfriend": ("girlfriend", "女朋友", "女友"),
    "mother": ("mother", "mom", "mum", "妈妈", "母亲", "妈"),
    "father": ("father", "dad", "爸爸", "父亲", "爸"),
    "sister": ("sister", "姐姐", "妹妹"),
    "brother": ("brother", "哥哥", "弟弟"),
    "son": ("son", "儿子"),
    "daughter": ("daughter", "女儿"),
    "friend": ("best friend", "friend", "朋友", "闺蜜", "好友"),
    "boss": ("boss", "manager", "老板", "领导", "上司"),
    "roommate": ("roommate", "flatmate", "室友", "舍友"),
    "landlord": ("landlord", "房东"),
    "colleague": ("colleague", "coworker", "co-worker", "同事"),
    "cousin": ("cousin", "表姐", "表妹", "表哥", "表弟", "堂姐", "堂妹", "堂哥", "堂弟"),
    "neighbor": ("neighbor", "neighbour", "邻居"),
    "dog": ("dog", "puppy", "狗狗", "小狗", "狗"),
    "cat": ("cat", "kitten", "猫咪", "小猫", "猫"),
}
PETS = frozenset({"dog", "cat"})

# The bilingual gazetteer: a canonical name, its kind (a city is a home, a company an employer) and its
# spellings. Values compare by canonical name, so a correction may be said in the other language.
GAZETTEER: dict[str, tuple[str, tuple[str, ...]]] = {
    "beijing": ("city", ("Beijing", "Peking", "北京")),
    "shanghai": ("city", ("Shanghai", "上海")),
    "nanjing": ("city", ("Nanjing", "南京")),
    "hangzhou": ("city", ("Hangzhou", "杭州")),
    "shenzhen": ("city", ("Shenzhen", "深圳")),
    "guangzhou": ("city", ("Guangzhou", "Canton", "广州")),
    "chengdu": ("city", ("Chengdu", "成都")),
    "wuhan": ("city", ("Wuhan", "武汉")),
    "suzhou": ("city", ("Suzhou", "苏州")),
    "xian": ("city", ("Xi'an", "Xian", "西安")),
    "tianjin": ("city", ("Tianjin", "天津")),
    "chongqing": ("city", ("Chongqing", "重庆")),
    "hong kong": ("city", ("Hong Kong", "香港")),
    "taipei": ("city", ("Taipei", "台北")),
    "singapore": ("city", ("Singapore", "新加坡")),
    "tokyo": ("city", ("Tokyo", "东京")),
    "seoul": ("city", ("Seoul", "首尔")),
    "london": ("city", ("London", "伦敦")),
    "paris": ("city", ("Paris", "巴黎")),
    "berlin": ("city", ("Berlin", "柏林")),
    "new york": ("city", ("New York", "NYC", "纽约")),
    "san francisco": ("city", ("San Francisco", "SF", "旧金山")),
    "seattle": ("city", ("Seattle", "西雅图")),
    "boston": ("city", ("Boston", "波士顿")),
    "chicago": ("city", ("Chicago", "芝加哥")),
    "los angeles": ("city", ("Los Angeles", "LA", "洛杉矶")),
    "toronto": ("city", ("Toronto", "多伦多")),
    "vancouver": ("city", ("Vancouver", "温哥华")),
    "sydney": ("city", ("Sydney", "悉尼")),
    "melbourne": ("city", ("Melbourne", "墨尔本")),
    "denver": ("city", ("Denver", "丹佛")),
    "portland": ("city", ("Portland", "波特兰")),
    "austin": ("city", ("Austin", "奥斯汀")),
    "deloitte": ("company", ("Deloitte", "德勤")),
    "pwc": ("company", ("PwC", "PricewaterhouseCoopers", "普华永道")),
    "kpmg": ("company", ("KPMG", "毕马威")),
    "ey": ("company", ("EY", "Ernst & Young", "安永")),
    "alibaba": ("company", ("Alibaba", "阿里巴巴", "阿里")),
    "tencent": ("company", ("Tencent", "腾讯")),
    "baidu": ("company", ("Baidu", "百度")),
    "bytedance": ("company", ("ByteDance", "字节跳动", "字节")),
    "huawei": ("company", ("Huawei", "华为")),
    "xiaomi": ("company", ("Xiaomi", "小米")),
    "meituan": ("company", ("Meituan", "美团")),
    "jd": ("company", ("JD", "JD.com", "京东")),
    "microsoft": ("company", ("Microsoft", "微软")),
    "google": ("company", ("Google", "谷歌")),
    "apple": ("company", ("Apple", "苹果公司")),
    "amazon": ("company", ("Amazon", "亚马逊")),
    "stripe": ("company", ("Stripe",)),
    "ibm": ("company", ("IBM",)),
    "tesla": ("company", ("Tesla", "特斯拉")),
}

# Job nouns (the head of a job title) in both languages.
JOBS_EN = ("engineer", "manager", "designer", "developer", "programmer", "teacher", "professor", "nurse", "doctor",
           "physician", "surgeon", "dentist", "pharmacist", "therapist", "lawyer", "attorney", "accountant", "analyst",
           "scientist", "consultant", "writer", "editor", "journalist", "researcher", "chef", "cook", "pilot", "architect",
           "officer", "director", "intern", "student", "barista", "cashier", "driver", "electrician", "plumber",
           "salesperson", "marketer", "recruiter", "librarian", "photographer", "artist", "musician", "lead", "founder")
JOBS_ZH = ("工程师", "产品经理", "经理", "设计师", "程序员", "老师", "教师", "教授", "护士", "医生", "律师", "会计", "分析师",
           "研究员", "顾问", "编辑", "记者", "厨师", "飞行员", "建筑师", "实习生", "学生", "司机", "销售", "主管", "总监")
CAR_BRANDS = ("Toyota", "Honda", "Tesla", "Ford", "BMW", "Subaru", "Audi", "Volkswagen", "VW", "Hyundai", "Kia", "Mazda",
              "Nissan", "Chevy", "Chevrolet", "Volvo", "Mercedes", "Jeep", "Lexus", "Porsche", "Rivian", "Prius",
              "比亚迪", "特斯拉", "丰田", "本田", "大众", "宝马", "奥迪", "奔驰", "蔚来", "理想", "小鹏")
DRUGS = ("metformin", "insulin", "lisinopril", "ibuprofen", "sertraline", "zoloft", "prozac", "fluoxetine", "atorvastatin",
         "lipitor", "levothyroxine", "amlodipine", "omeprazole", "adderall", "aspirin", "melatonin", "warfarin",
         "二甲双胍", "胰岛素", "阿司匹林", "布洛芬", "褪黑素", "他汀")

# Values that mean one thing in any wording, compared by their canonical form.
CANONICAL: dict[str, str] = {
    "吃素": "vegetarian", "素食": "vegetarian", "素食者": "vegetarian", "素食主义者": "vegetarian", "veggie": "vegetarian",
    "纯素": "vegan", "全素": "vegan", "吃全素": "vegan", "吃纯素": "vegan",
    "单身": "single", "结婚了": "married", "已婚": "married", "结婚": "married", "离婚了": "divorced", "离婚": "divorced",
    "订婚了": "engaged", "订婚": "engaged",
    "中文": "chinese", "汉语": "chinese", "普通话": "chinese", "mandarin": "chinese", "英文": "english", "英语": "english",
    "简短": "short", "简洁": "short", "brief": "short", "concise": "short", "详细": "long", "detailed": "long", "longer": "long",
    "夜班": "night shift", "白班": "day shift", "早班": "morning shift", "晚班": "evening shift", "nights": "night shift",
    "days": "day shift", "night": "night shift", "day": "day shift",
}
ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
