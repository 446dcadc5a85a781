"""Rules for other statements: births, dated events, named relations, "my X is Y", possessions."""

from __future__ import annotations

import re

from ..lexicon import CATEGORIES, GROUPS, RELATIONS, SUBJECTS, VAGUE_SUBJECTS, category
from ..text import ADV, PRONOUNS, TIME_EXPR, cap, slug, trim_value
from .base import Frame, Rule, kw, registrar

RULES: list[Rule] = []
_rule = registrar(RULES)


#: Verbs that give an attribute a new value ("we raised the budget to 4500 euros").
_CHANGE_VERBS = (
    r"raised|increased|lowered|reduced|cut|changed|moved|pushed|bumped|upped|extended|"
    r"shortened|updated|doubled|halved|dropped|brought|postponed|rescheduled|shifted"
)


@_rule(
    "change",
    rf"^(?:i|we|the [a-z]+|my [a-z]+) {ADV}(?:have |had )?(?:{_CHANGE_VERBS}) (?:my|our|the) "
    r"(?P<s>(?:[a-z][\w'\-]* ){0,2}?[a-z][\w'\-]*)(?: (?:for|of) (?:the |my |our )?[\w\- ]+?)?"
    r"(?: (?:back|up|down|forward))?(?: from (?P<old>.+?))? to (?P<v>.+)$",
)
def _change(m: re.Match[str], clause: str) -> Frame | None:
    s = m["s"].lower().strip()
    v = trim_value(m["v"])
    if not v or s.split()[-1] in VAGUE_SUBJECTS:
        return None
    mapped = SUBJECTS.get(s)
    key = f"user.{mapped}" if mapped is not None else f"user.{slug(s)}"
    return Frame(
        "change",
        "fact",
        cap(clause),
        v,
        key,
        kw(clause, s),
        (f"what is my {s}", f"what is the {s}"),
    )


@_rule("born", r"^my (?P<s>[a-z][\w\- ]*?) was born (?P<v>.+)$")
def _born(m: re.Match[str], clause: str) -> Frame | None:
    return Frame(
        "born",
        "event",
        cap(clause),
        m["v"],
        None,
        kw(clause, "born", "birth"),
        (f"when was my {m['s']} born",),
    )


_EVENT_VERBS = (
    r"went|visited|attended|met|finished|completed|started|began|ran|won|lost|bought|sold|"
    r"deployed|shipped|released|launched|graduated|passed|failed|fixed|broke|adopted|booked|"
    r"signed|hired|fired|quit|left|returned|traveled|travelled|flew|drove|upgraded|installed|"
    r"presented|submitted|published|celebrated|received|earned|got|had|became|moved|closed|"
    r"opened|hit|reached|crossed|climbed|hiked|cooked|baked|painted|wrote|built|sent|"
    r"interviewed|applied|signed up|retired|gave|took|migrated|merged|rolled back"
)
_MILESTONES = re.compile(
    r"\b(?:deployed|shipped|released|launched|graduated|got (?:promoted|married|engaged|"
    r"divorced|hired|fired|laid off|a promotion|the job|an offer)|quit|retired|adopted|"
    r"published|hired|signed (?:the|a) (?:contract|lease)|had (?:a|our|my) (?:baby|son|"
    r"daughter)|passed (?:my|the)|closed (?:the|a|our) (?:deal|round)|rolled back|merged)\b",
    re.I,
)


@_rule("event", rf"^(?:i|we) {ADV}(?P<verb>{_EVENT_VERBS}) (?P<v>.+)$")
def _event(m: re.Match[str], clause: str) -> Frame | None:
    if not (TIME_EXPR.search(clause) or _MILESTONES.search(clause)):
        return None
    v = m["v"].strip()
    return Frame(
        "event",
        "event",
        cap(clause),
        v,
        None,
        kw(clause, m["verb"].lower()),
        ("what happened", f"when did I {m['verb'].lower()} {trim_value(v)}"),
    )


@_rule(
    "named",
    r"^my (?P<s>[a-z][\w\- ]*?)(?:'s name is| is called| is named| goes by) "
    r"(?P<v>[a-z][\w'\-]*(?: [a-z][\w'\-]*){0,2})$",
)
def _named(m: re.Match[str], clause: str) -> Frame | None:
    s = m["s"].lower()
    v = m["v"]
    if not v[:1].isupper():
        return None
    return Frame(
        "named",
        "fact",
        cap(clause),
        v,
        f"user.{slug(s, 2)}.name",
        kw(clause, "name", s),
        (f"what is my {s}'s name",),
    )


@_rule(
    "my_x_is",
    r"^(?:my|our) (?P<s>(?:[a-z][\w'\-]* ){0,3}?[a-z][\w'\-]*)"
    r"(?: (?:for|of|on|at) (?:the |my |our |this |a |an )?(?:[\w\-]+ ){0,2}?[\w\-]+)? (?:is|are) "
    r"(?:now |still |currently |actually )?(?P<v>.+)$",
)
def _my_x_is(m: re.Match[str], clause: str) -> Frame | None:
    s = m["s"].lower().strip()
    v = trim_value(m["v"])
    head = s.split()[-1]
    if not v or head in VAGUE_SUBJECTS or v.lower().startswith(("that ", "to ", "not ", "so ")):
        return None
    if v.lower() in PRONOUNS or re.match(r"^(?:going|coming|doing|trying|being)\b", v, re.I):
        return None  # "my sister is coming" is no attribute
    if head in RELATIONS or s.replace(" ", "-") in RELATIONS:
        is_name = v[:1].isupper() and len(v.split()) <= 3 and category(v) is None
        name_key = f"user.{slug(s, 2)}.name" if is_name else None
        return Frame(
            "relation", "fact", cap(clause), v, name_key, kw(clause, s), (f"who is my {s}",)
        )
    mapped = SUBJECTS.get(s)
    key: str | None = f"user.{mapped}" if mapped is not None else f"user.{slug(s)}"
    if key == "user.":
        return None
    if head in GROUPS:
        key = None  # "my family is awesome": a group has no single value to replace
    mtype = "preference" if mapped in CATEGORIES or mapped == "color" else "fact"
    return Frame("my_x_is", mtype, cap(clause), v, key, kw(clause, s), (f"what is my {s}",))


@_rule("has", r"^i (?:have|have got|own) (?P<v>(?:a|an|two|three|four|five|\d+) .+)$")
def _has(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if re.match(
        r"^(?:a|an) (?:question|idea|problem|issue|feeling|meeting|call|minute|"
        r"second|look|quick|few|couple|bit|lot|point)\b",
        m["v"],
        re.I,
    ):
        return None
    return Frame("has", "fact", cap(clause), v, None, kw(clause), (f"do I have {v}",))


@_rule(
    "ongoing",
    r"^(?:i|we) am (?:currently |still )?(?:learning|studying|training for|working "
    r"on|building|writing|preparing for|saving for|renovating|raising) (?P<v>.+)$|^(?:we|i) "
    r"are (?:currently |still )?(?:learning|studying|training for|working on|building|"
    r"preparing for|migrating|renovating) (?P<w>.+)$",
)
def _ongoing(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in PRONOUNS:
        return None
    return Frame("ongoing", "fact", cap(clause), v, None, kw(clause), ("what am I working on",))


@_rule(
    "timezone",
    r"^i am in (?:the )?(?P<v>(?:utc|gmt|cet|cest|pst|pdt|est|edt|ist|jst|aest)"
    r"(?:[+-]\d{1,2})?|[\w/ ]+ time ?zone)$",
)
def _timezone(m: re.Match[str], clause: str) -> Frame | None:
    return Frame(
        "timezone",
        "fact",
        cap(clause),
        m["v"],
        "user.timezone",
        kw(clause, "timezone"),
        ("what is my time zone",),
    )
