"""Rules about the person: name, age, birthday, where they live and come from, work, diet."""

from __future__ import annotations

import re

from ..lexicon import DIETS, PROFESSIONS, category
from ..text import ADV, PRONOUNS, cap, slug, trim_value
from .base import Frame, Rule, kw, registrar, with_source

RULES: list[Rule] = []
_rule = registrar(RULES)


@_rule(
    "name",
    r"^(?:my name is|i am called|people call me|please call me|call me|i go by|"
    r"you can call me|my name's) (?P<v>[a-z][\w'\-]*(?: [a-z][\w'\-]*){0,2})$",
)
def _name(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"]
    if not v[:1].isupper() or v.lower() in PRONOUNS:
        return None
    return Frame(
        "name",
        "fact",
        f"My name is {v}",
        v,
        "user.name",
        kw(clause, "name"),
        ("what is my name", "what is the user's name"),
    )


@_rule("age", r"^i am (?P<v>\d{1,3})(?: years? old)?$|^i (?:just )?turned (?P<w>\d{1,3})\b.*$")
def _age(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"] or m["w"]
    return Frame(
        "age",
        "fact",
        with_source(f"I am {v} years old", clause),
        v,
        "user.age",
        kw(clause, "age", "old"),
        ("how old am I",),
    )


@_rule("birthday", r"^(?:my birthday is(?: on)?|i was born on) (?P<v>.+)$")
def _birthday(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    return Frame(
        "birthday",
        "fact",
        cap(clause),
        v,
        "user.birthday",
        kw(clause, "birthday"),
        ("when is my birthday",),
    )


@_rule("birthplace", r"^i was born in (?P<v>.+)$")
def _birthplace(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    key = "user.birth_year" if re.fullmatch(r"(?:19|20)\d\d", v) else "user.birthplace"
    return Frame(
        "birthplace", "fact", cap(clause), v, key, kw(clause, "born"), ("where was I born",)
    )


@_rule(
    "residence_move",
    rf"^(?:i|we) {ADV}(?:have |had )?(?:moved|relocated|emigrated)"
    r"(?: back| over| out)?(?: from [\w\- ]+?)? (?:to|into) (?P<v>.+)$",
)
def _moved(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v or category(v) is not None or v.lower() in PRONOUNS:
        return None  # "I moved to emacs" is a tool switch (handled by the switch rule)
    return Frame(
        "residence",
        "fact",
        with_source(f"I live in {v}", clause),
        v,
        "user.residence",
        kw(clause, "live", "home", "residence", "city"),
        ("where do I live", "where does the user live", "which city is home"),
    )


@_rule(
    "residence",
    rf"^(?:i|we) {ADV}(?:live|reside|am living|are living|am staying|stay|"
    r"am based|are based|am located) in (?P<v>.+)$|^(?:my|our) (?:home|house|apartment|flat|"
    r"place) is in (?P<w>.+)$|^(?:i|we) (?:now )?call (?P<x>.+) home$",
)
def _residence(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"] or m["x"])
    if not v or v.lower() in PRONOUNS or v.lower().startswith(("the moment", "fear", "hope")):
        return None
    return Frame(
        "residence",
        "fact",
        with_source(f"I live in {v}", clause),
        v,
        "user.residence",
        kw(clause, "live", "home", "residence", "city"),
        ("where do I live", "where does the user live", "which city is home"),
    )


@_rule("origin", r"^i (?:am|come) (?:originally )?from (?P<v>.+)$|^i grew up in (?P<w>.+)$")
def _origin(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in PRONOUNS:
        return None
    return Frame(
        "origin",
        "fact",
        cap(clause),
        v,
        "user.origin",
        kw(clause, "origin", "hometown"),
        ("where am I from", "where did I grow up"),
    )


@_rule(
    "employer",
    rf"^i {ADV}(?:work|am working|have been working) (?:at|for) (?P<v>.+?)"
    r"(?: as (?:a |an )?(?P<role>.+))?$|^i " + ADV + r"(?:joined|have joined|started "
    r"(?:working )?at|started a (?:new )?job at|got a (?:new )?job at|am employed (?:at|by)|"
    r"took a (?:new )?job at) (?P<w>.+)$",
)
def _employer(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in PRONOUNS or v.lower().startswith(("home", "myself")):
        return None
    if m["w"] and re.match(r"^(?:a|an|some|this|that)\s", m["w"], re.I):
        return None  # "I joined a gym", "I joined a support group": no employer
    canonical = f"I work at {v}" + (f" as {trim_value(m['role'])}" if m["role"] else "")
    return Frame(
        "employer",
        "fact",
        with_source(canonical, clause),
        v,
        "user.employer",
        kw(clause, "work", "employer", "job", "company"),
        ("where do I work", "who is my employer", "which company do I work for"),
    )


@_rule(
    "occupation",
    rf"^i {ADV}(?:work|am working) as (?:a |an )?(?P<v>.+)$|^i {ADV}"
    r"(?:am|became|have become|am now) (?:a |an )(?P<w>(?:[\w\-]+ ){0,3}[\w\-]+)"
    r"(?: (?:at|for|in|with) (?:a |an |the )?[\w\- ]+)?$",
)
def _occupation(m: re.Match[str], clause: str) -> Frame | None:
    if m["w"] is not None:
        v = trim_value(m["w"])
        if re.fullmatch(DIETS, v, re.I):
            return None
        if not PROFESSIONS.search(v):
            return None
    else:
        v = trim_value(m["v"])
    if not v:
        return None
    return Frame(
        "occupation",
        "fact",
        with_source(f"I work as {_article(v)}", clause),
        v,
        "user.occupation",
        kw(clause, "job", "occupation", "work"),
        ("what is my job", "what do I do for work"),
    )


def _article(v: str) -> str:
    return ("an " if v[:1].lower() in "aeiou" else "a ") + v


@_rule(
    "diet",
    rf"^i {ADV}(?:am|have been|have become|became|went|eat) (?:a |an |fully |strict )?"
    rf"(?:strict )?(?P<v>{DIETS})\b[^,]*$",
)
def _diet(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"].lower()
    return Frame(
        "diet",
        "preference",
        cap(clause),
        v,
        "user.diet",
        kw(clause, "diet", "food", "eat"),
        ("what is my diet", "what food do I eat"),
    )


@_rule(
    "allergy",
    r"^i am (?:severely |very |mildly |highly )?allergic to (?P<v>.+)$|^i have "
    r"(?:a |an )?(?:severe |mild )?(?P<w>[\w\- ]+?) allergy$",
)
def _allergy(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v:
        return None
    return Frame(
        "allergy",
        "fact",
        cap(clause),
        v,
        f"user.allergy.{slug(v, 2)}",
        kw(clause, "allergy", "allergic"),
        ("what am I allergic to",),
    )


@_rule(
    "not_eat",
    r"^i (?:do not|never|no longer|cannot|can not) (?P<verb>eat|drink) "
    r"(?P<v>.+)$|^i (?P<pverb>eat|drink) (?P<w>.+?) (?:again|now)$",
)
def _eat(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    verb = (m["verb"] or m["pverb"]).lower()
    if not v:
        return None
    return Frame(
        "eat",
        "preference",
        cap(clause),
        v,
        f"user.{verb}s.{slug(v, 2)}",
        kw(clause, verb, "diet"),
        (f"do I {verb} {v}",),
        polarity=m["verb"] is None,
    )
