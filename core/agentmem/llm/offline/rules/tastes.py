"""Rules about tastes and tools: favourites, switches, what they use, prefer, like, speak."""

from __future__ import annotations

import re

from ..lexicon import LANGUAGES, SUBJECTS, category, label
from ..text import ADV, PRONOUNS, cap, slug, trim_value, words
from .base import Frame, Rule, head, kw, registrar, with_source

RULES: list[Rule] = []
_rule = registrar(RULES)


@_rule(
    "favourite",
    r"^my (?:absolute |all-time |current |new )?(?:favou?rite|preferred|go-to) "
    r"(?P<s>[\w\- ]+?) (?:is|are|has to be|would be|remains|is now|has become) (?P<v>.+)$",
)
def _favourite(m: re.Match[str], clause: str) -> Frame | None:
    s = m["s"].lower().strip()
    v = trim_value(m["v"])
    if not v:
        return None
    cat = SUBJECTS.get(s)
    key = f"user.{cat}" if cat is not None else f"user.favorite.{slug(s)}"
    lbl = label(cat) if cat is not None else s
    return Frame(
        "favourite",
        "preference",
        with_source(f"My favourite {lbl} is {v}", clause),
        v,
        key,
        kw(clause, "favourite", "favorite", lbl),
        (f"what is my favourite {lbl}", f"which {lbl} do I prefer"),
    )


@_rule(
    "switch",
    rf"^(?:i|we) {ADV}(?:have |had )?(?:switched|moved|migrated|changed|converted|"
    r"went back|switched back|changed over|jumped ship)(?: over| back)?(?: from (?P<old>.+?))? "
    r"to (?P<v>.+?)(?: for (?P<purpose>.+))?$",
)
def _switch(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    cat = category(v) or (category(m["old"]) if m["old"] else None)
    if cat is None:
        if clause.lower().split()[1:2] == ["moved"] or not v:
            return None  # "I moved to Lisbon": residence
        key = f"user.tool.{slug(m['purpose'])}" if m["purpose"] else None
        return Frame(
            "switch",
            "preference",
            cap(clause),
            v,
            key,
            kw(clause, "switched", "use"),
            (f"what do I use instead of {m['old']}" if m["old"] else f"do I use {v}",),
        )
    lbl = label(cat)
    return Frame(
        "switch",
        "preference",
        with_source(f"I use {v} as my {lbl}", clause),
        v,
        f"user.{cat}",
        kw(clause, lbl, "use"),
        (f"which {lbl} do I use", f"what is my {lbl}"),
    )


@_rule(
    "use",
    rf"^(?:i|we) {ADV}(?:use|am using|are using|have been using|started using|"
    r"rely on|work in|code in|program in|write code in|develop in|write|run) "
    r"(?P<v>.+?)(?: (?:for|as) (?:my |our |a |an )?(?P<purpose>.+))?$",
)
def _use(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v or v.lower() in PRONOUNS or v.split()[0].lower() in PRONOUNS:
        return None
    cat = category(v)
    verb = clause.lower().split()[1:2]
    if cat is None and verb in (["write"], ["run"]):
        return None  # "I write poems", "I run marathons": not tool use
    if cat is None and m["purpose"]:
        cat_p = SUBJECTS.get(m["purpose"].lower().strip())
        key = f"user.{cat_p}" if cat_p else f"user.tool.{slug(m['purpose'])}"
        return Frame(
            "use",
            "fact",
            cap(clause),
            v,
            key,
            kw(clause, "use", "tool"),
            (f"what do I use for {m['purpose']}",),
        )
    if cat is None:
        return Frame(
            "use", "fact", cap(clause), v, None, kw(clause, "use", "tool"), (f"do I use {v}",)
        )
    lbl = label(cat)
    return Frame(
        "use",
        "fact",
        with_source(f"I use {v} as my {lbl}", clause),
        v,
        f"user.{cat}",
        kw(clause, lbl, "use"),
        (f"which {lbl} do I use", f"what is my {lbl}"),
    )


@_rule(
    "prefer",
    rf"^(?:i|we) {ADV}(?:prefer|would prefer|favou?r|would rather have|"
    r"would rather use|like better|go for) (?P<v>.+?)(?: (?:over|to|rather than|instead of|"
    r"than|versus|vs\.?) (?P<alt>.+))?$",
)
def _prefer(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    alt = trim_value(m["alt"]) if m["alt"] else None
    if not v or v.lower() in PRONOUNS:
        return None
    cat = category(v) or (category(alt) if alt else None)
    if cat is not None:
        key: str | None = f"user.{cat}"
        queries: tuple[str, ...] = (f"which {label(cat)} do I prefer",)
    elif alt:
        pair = sorted([slug(v, 2), slug(alt, 2)])
        key = f"user.preference.{pair[0]}_vs_{pair[1]}"
        queries = (f"do I prefer {v} or {alt}",)
    else:
        noun = head(v)
        key = f"user.preference.{noun}" if noun else None
        queries = (f"what {noun or v} do I prefer",)
    return Frame("prefer", "preference", cap(clause), v, key, kw(clause, "prefer"), queries)


_LIKE_VERBS = (
    r"like|love|enjoy|adore|hate|dislike|detest|loathe|cannot stand|can not stand|am into|"
    r"am a (?:big |huge )?fan of|am not a (?:big )?fan of|am not into"
)


@_rule(
    "likes",
    rf"^i {ADV}(?P<neg>do not |no longer |never |do not really |stopped )?"
    rf"(?:really )?(?P<verb>{_LIKE_VERBS}|liking|loving|enjoying) (?P<v>.+)$",
)
def _likes(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    v = re.sub(r"\s+(?:a lot|very much|so much|anymore|any more|at all)$", "", v, flags=re.I)
    if not v or v.lower() in PRONOUNS or v.lower().startswith(("to know", "you", "it when")):
        return None
    verb = m["verb"].lower()
    negative = verb in {"hate", "dislike", "detest", "loathe", "cannot stand", "can not stand"}
    negative = negative or verb.startswith(("am not",))
    if m["neg"]:
        negative = not negative
    key = slug(v, 3)
    if not key:
        return None
    # "I love how art lets me ...", "I love that you came": a remark, not a liked thing
    remark = re.match(r"^(?:how|that|when|what|the way|it|this|being|seeing|watching)\b", v, re.I)
    return Frame(
        "likes",
        "preference",
        cap(clause),
        v,
        None if remark else f"user.likes.{key}",
        kw(clause, "like", "enjoy"),
        (f"do I like {v}", "what do I like"),
        polarity=not negative,
    )


@_rule("speaks", r"^i (?:also )?speak (?P<v>.+)$")
def _speaks(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not any(w in LANGUAGES for w in words(v)):
        return None
    return Frame(
        "speaks",
        "fact",
        cap(clause),
        v,
        "user.spoken_languages",
        kw(clause, "language", "speak"),
        ("which languages do I speak",),
    )


@_rule(
    "relationship",
    r"^i am (?:now |happily |recently )?(?P<v>married|single|divorced|engaged|"
    r"widowed|separated|in a relationship)\b.*$",
)
def _relationship(m: re.Match[str], clause: str) -> Frame | None:
    return Frame(
        "relationship",
        "fact",
        cap(clause),
        m["v"].lower(),
        "user.relationship_status",
        kw(clause, "relationship"),
        ("am I married",),
    )


@_rule("drives", r"^i (?:now )?(?:drive|own) (?:a|an) (?P<v>.+)$")
def _drives(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v:
        return None
    key = "user.car" if clause.lower().split()[1:2] == ["drive"] else None
    return Frame("owns", "fact", cap(clause), v, key, kw(clause, "car"), (f"do I own {v}",))
