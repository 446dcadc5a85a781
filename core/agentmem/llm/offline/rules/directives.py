"""Rules for standing instructions, decisions and tasks."""

from __future__ import annotations

import re

from ..lexicon import LANGUAGES
from ..text import ADV, STOPWORDS, cap, slug, trim_value, words
from .base import Frame, Rule, head, kw, registrar

RULES: list[Rule] = []
_rule = registrar(RULES)

_ACTION_VERBS = (
    r"use|add|include|write|reply|respond|answer|format|mention|call|put|say|apologi[sz]e|"
    r"suggest|recommend|ask|show|print|change|touch|commit|push|delete|remove|run|make|give|"
    r"send|start|end|sign|cite|explain|translate|summari[sz]e|bold|capitali[sz]e|abbreviate|"
    r"repeat|list|number|indent|wrap|comment|document|test|deploy|merge|rebase|email|message|"
    r"contact|schedule|book|speak|talk|address|refer|keep|avoid|assume|shorten|lengthen|be"
)

# -- instructions, decisions, tasks --------------------------------------------------------------
_PERSISTENT = (
    r"always|never|from now on|going forward|in (?:the )?future|henceforth|by default|"
    r"every time|whenever possible|each time|at all times|in all (?:your )?(?:answers|replies)"
)
_ASPECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("language", re.compile(r"\b(?:in|to) (?:" + "|".join(sorted(LANGUAGES)) + r")\b", re.I)),
    (
        "length",
        re.compile(
            r"\b(?:short|brief|concise|long|detailed|verbose|succinct|terse|"
            r"lengthy|one[- ]line|one sentence|few sentences|words? or less)\b",
            re.I,
        ),
    ),
    (
        "format",
        re.compile(
            r"\b(?:markdown|bullet(?:ed)?(?: points| lists?)?|bullets|tables?|json|"
            r"plain text|headers|headings|code blocks?|numbered lists?|prose)\b",
            re.I,
        ),
    ),
    (
        "units",
        re.compile(r"\b(?:metric|imperial|celsius|fahrenheit|kilometers|miles|kg|pounds)\b", re.I),
    ),
    ("indentation", re.compile(r"\b(?:tabs|spaces)\b(?:.*indent)?|\bindent", re.I)),
    (
        "tone",
        re.compile(
            r"\b(?:formal|informal|casual|friendly|professional|polite|blunt|"
            r"direct|tone)\b",
            re.I,
        ),
    ),
    ("emoji", re.compile(r"\bemojis?\b|\bemoticons?\b", re.I)),
    ("quotes", re.compile(r"\b(?:single|double) quotes\b", re.I)),
    ("type_hints", re.compile(r"\btype (?:hints|annotations)\b", re.I)),
    ("spelling", re.compile(r"\b(?:british|american|us|uk) (?:english|spelling)\b", re.I)),
    ("timezone", re.compile(r"\b(?:utc|gmt|cet|cest|pst|pdt|est|edt|time ?zone)\b", re.I)),
)


@_rule(
    "instruction",
    rf"^(?:please )?(?:(?:you should|you must|you need to|i want you to|"
    rf"i would like you to|i need you to|make sure (?:to|that you|you)|be sure to)\s+)?"
    rf"(?P<marker>{_PERSISTENT})\b,?\s+(?:please\s+)?(?:you\s+(?:should\s+|must\s+)?)?"
    rf"(?:do not\s+|don't\s+)?(?P<body>.+)$|^(?:please )?(?:(?:i want you to|i would like you "
    rf"to|you should|you must|i need you to) )?(?P<neg>do not|don't|never|stop|avoid) "
    rf"(?P<body2>(?:{_ACTION_VERBS})\b.*)$|^(?:please )?(?:i want you to|i would like you to|"
    rf"you should|you must) (?P<body3>(?:{_ACTION_VERBS})\b.+ (?:{_PERSISTENT}))$|^when "
    rf"(?:you )?(?P<cond>(?:answer|reply|respond|writ|talk|explain|suggest|review|summari)"
    rf"\w*[^,]*), (?:please )?(?:always )?(?P<body4>.+)$",
)
def _instruction(m: re.Match[str], clause: str) -> Frame | None:
    body = m["body"] or m["body2"] or m["body3"] or m["body4"]
    if not body:
        return None
    body = trim_value(body) if m["body3"] is None else body
    lowered = body.lower()
    if lowered.startswith(("forget to", "let me forget", "worry", "mind", "hesitate")):
        return None  # "don't forget to ..." is a task, "don't worry" is nothing
    aspect = next((name for name, rx in _ASPECTS if rx.search(clause)), None)
    if aspect in _ANSWER_ASPECTS and not _ABOUT_ANSWERS.search(clause):
        aspect = None  # "never suggest long bus rides" is not about the length of answers
    if aspect is None:
        aspect = _instruction_key(lowered)
        if m["cond"]:
            aspect = f"{slug(m['cond'], 2)}.{aspect}" if aspect else slug(m["cond"], 2)
        if not aspect:
            return None
    return Frame(
        "instruction",
        "instruction",
        cap(clause),
        body,
        f"instruction.{aspect}",
        kw(clause, "instruction", "always"),
        ("how should you answer", f"instructions about {aspect.replace('_', ' ')}"),
        polarity=not (m["neg"] or "never" in (m["marker"] or "").lower()),
    )


_PREPOSITIONS = frozenset(
    """as in with using to for on at by from before after when if into instead of unless
    without than per via over under""".split()
)
_POLARITY_WORDS = frozenset("please always never ever do not don't you should must".split())


def _instruction_key(body: str) -> str:
    """``verb_head`` of an instruction body: "format dates as ISO" -> ``format_dates``."""
    ws = [w for w in words(body) if w not in _POLARITY_WORDS]
    if not ws:
        return ""
    verb, rest = ws[0], ws[1:]
    obj: list[str] = []
    for w in rest:
        if w in _PREPOSITIONS:
            break
        obj.append(w)
    heads = [w for w in obj if w not in STOPWORDS]
    parts = [verb, *heads[-1:]]
    return "_".join(re.sub(r"[^a-z0-9]+", "_", p).strip("_") for p in parts)


#: Imperatives about answer style are standing instructions even without "always".
_STYLE_IMPERATIVE = re.compile(
    r"^(?:please )?(?:keep|use|answer|reply|respond|talk|speak|format|stick to|write "
    r"(?:your )?(?:answers|replies|responses)|be)\b(?P<body>.+)$",
    re.I,
)
#: Aspects that describe answers: only when the instruction is about answers or writing.
_ANSWER_ASPECTS = frozenset({"length", "format", "tone"})
_ABOUT_ANSWERS = re.compile(
    r"\b(?:answer|repl|respon|messag|explanation|explain|summar|text|writ|output|code|"
    r"email|sentence|word|bullet|format|tone|markdown|table|list|heading)\w*",
    re.I,
)
_STYLE_ASPECTS = frozenset({"language", "length", "format", "units", "tone", "emoji", "spelling"})


def style_instruction(clause: str) -> Frame | None:
    """A style imperative ("Keep your answers short", "Use metric units") or None."""
    if _STYLE_IMPERATIVE.match(clause) is None:
        return None
    aspect = next((name for name, rx in _ASPECTS if rx.search(clause)), None)
    if aspect not in _STYLE_ASPECTS:
        return None
    body = re.sub(r"^please\s+|,?\s*please$", "", clause, flags=re.I)
    return Frame(
        "instruction",
        "instruction",
        cap(clause),
        body,
        f"instruction.{aspect}",
        kw(clause, "instruction"),
        ("how should you answer", f"instructions about {aspect}"),
    )


@_rule(
    "style", r"^(?:please )?(?:keep|use|answer|reply|respond|talk|speak|format|stick|write|be)\b.+$"
)
def _style(m: re.Match[str], clause: str) -> Frame | None:
    return style_instruction(clause)


@_rule(
    "avoid",
    r"^(?:please )?(?:avoid|skip|leave out|no more) (?P<obj>[a-z][\w\- ]{1,40}?)"
    r"(?:\s+(?:when|while|in|for|with)\b.*)?$",
)
def _avoid(m: re.Match[str], clause: str) -> Frame | None:
    """ "Avoid jargon when explaining things to me": a standing instruction to leave out."""
    key = slug(m["obj"], 2)
    if not key:
        return None
    return Frame(
        "instruction",
        "instruction",
        cap(clause),
        m["obj"],
        f"instruction.avoid_{key}",
        kw(clause, "instruction", "avoid"),
        ("how should you answer", f"instructions about {m['obj']}"),
        polarity=False,
    )


@_rule(
    "decision",
    rf"^(?:we|i|the team|our team) {ADV}(?:have |had )?(?:decided|agreed|chose|"
    r"have chosen|settled|concluded|are going with|will go with|went with|picked|opted)"
    r"(?: on| for| to| that)? (?P<v>.+)$|^let us (?P<w>(?:go with|use|stick with|switch to) .+)$"
    r"|^the decision (?:is|was) (?:to )?(?P<x>.+)$",
)
def _decision(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"] or m["x"])
    if not v:
        return None
    return Frame(
        "decision",
        "decision",
        cap(clause),
        v,
        None,
        kw(clause, "decided", "decision"),
        ("what did we decide", f"what did we decide about {head(v) or v}"),
    )


@_rule(
    "task",
    r"^(?:please )?(?:remind me (?:to|about|that)|do not let me forget (?:to|about)|"
    r"do not forget to|remember to|i need to|i have to|i must|i still (?:need|have) to|"
    r"i have got to|i am going to|i will|i plan to|i am planning to|i intend to|"
    r"i should|i ought to|note to self:?|todo:?|to-do:?|to do:) (?P<v>.+)$"
    r"|^add (?P<w>.+) to my (?:to-?do|task|todo|shopping) list$",
)
def _task(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"]) if (m["v"] or m["w"]) else ""
    if not v or re.match(
        r"^(?:be|think|see|let you know|get back|have a|try|do (?:it|that|this)|grab|"
        r"take a (?:break|nap|shower|walk)|head out|go to (?:bed|sleep)|step away|brb)\b",
        v,
        re.I,
    ):
        return None
    return Frame(
        "task",
        "task",
        cap(clause),
        v,
        None,
        kw(clause, "todo", "task", "remind"),
        ("what do I need to do", "what are my open tasks"),
        scope="session",
    )
