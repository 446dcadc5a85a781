"""Text helpers of the offline LLM: normalising, cutting into sentences and clauses, words.

Everything here is plain English text handling, shared by the rule table
(:mod:`agentmem.llm.offline.rules`), the extractor, the summariser and the answerer.
"""

from __future__ import annotations

import re

# -- text normalisation ------------------------------------------------------------------------
_CONTRACTIONS: tuple[tuple[str, str], ...] = (
    (r"\bi'm\b", "i am"),
    (r"\bi've\b", "i have"),
    (r"\bi'd\b", "i would"),
    (r"\bi'll\b", "i will"),
    (r"\bwe're\b", "we are"),
    (r"\bwe've\b", "we have"),
    (r"\bwe'll\b", "we will"),
    (r"\bwe'd\b", "we would"),
    (r"\byou're\b", "you are"),
    (r"\byou'll\b", "you will"),
    (r"\blet's\b", "let us"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bdon't\b", "do not"),
    (r"\bdoesn't\b", "does not"),
    (r"\bdidn't\b", "did not"),
    (r"\bisn't\b", "is not"),
    (r"\baren't\b", "are not"),
    (r"\bwasn't\b", "was not"),
    (r"\bhaven't\b", "have not"),
    (r"\bshouldn't\b", "should not"),
    (r"\bwouldn't\b", "would not"),
    (r"\bit's\b", "it is"),
    (r"\bthat's\b", "that is"),
    (r"\bgonna\b", "going to"),
    (r"\bwanna\b", "want to"),
    (r"\bgotta\b", "have to"),
)
_CONTRACTION_RES = [(re.compile(p, re.I), r) for p, r in _CONTRACTIONS]

#: Lead-ins that carry no content ("By the way, I live in Berlin").
_LEAD_INS = re.compile(
    r"^(?:(?:and|but|so|oh|well|actually|also|anyway|anyhow|ok|okay|yeah|yes|no|nope|hi|hello|"
    r"hey|btw|by the way|fyi|oh and|just so you know|for the record|for context|to be clear|"
    r"honestly|basically|quick update|update|heads up|just fyi|one more thing|oh by the way|"
    r"thanks|thank you|great|cool|sure|right|alright|all right|hmm|um|uh|ah|sorry|oops)"
    r"\b[,:!.\-\s]*|(?:please |also )?(?:remember|note|keep in mind|bear in mind|be aware)"
    r"\s+that\s+)+",
    re.I,
)
_TRAILERS = re.compile(
    r"(?:[,\s]+(?:though|by the way|btw|thanks|thank you|haha|lol|fyi|as well|too|now|btw)"
    r")+\s*$|\s*[:;][)(dp]\s*$",
    re.I,
)
_PARENS = re.compile(r"\s*\([^)]*\)")
#: A short label before a colon ("Big news: I moved ..."), dropped before a first-person clause.
_LABEL = re.compile(r"^[\w ,!'-]{1,30}:\s+(?=(?:i|we|my|our)\b)", re.I)
_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Straight quotes, expanded contractions, no lead-ins, parentheticals or end punctuation."""
    t = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    t = t.replace("\u201d", '"')
    t = _PARENS.sub("", t)
    t = _SPACES.sub(" ", t).strip()
    for rx, repl in _CONTRACTION_RES:
        t = rx.sub(repl, t)
    prev = None
    while prev != t:
        prev = t
        t = _LEAD_INS.sub("", t).strip()
        t = _LABEL.sub("", t).strip()
        lead = _LEADING_TIME.match(t)
        if lead:  # "Yesterday I went there." -> "I went there yesterday"
            rest = re.sub(r"[.!]+$", "", t[lead.end() :].strip())
            t = rest + " " + lead["when"]
        t = _TRAILERS.sub("", t).strip()
        t = t.strip(" \t\"'`*-–—:,")
        t = re.sub(r"[.!]+$", "", t).strip()
    return t


_LEADING_TIME = re.compile(
    r"^(?P<when>these days|nowadays|currently|lately|recently|yesterday|today|tonight|"
    r"(?:last|this|next) (?:week|month|year|weekend|night|summer|winter|spring|fall|autumn|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:a|one|two|three|four|five|six|a few|several) (?:days?|weeks?|months?|years?) ago|"
    r"in (?:19|20)\d\d|since (?:19|20)\d\d),?\s+(?=(?:i|we|my|our)\b)",
    re.I,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|;\s+|\s+[-–—]\s+")
_CLAUSE_SPLIT = re.compile(
    r"\s*,?\s+\b(?:and|but|plus|and also|so)\s+(?=(?:i|we|my|our)\b)|,\s+(?=(?:i|my)\s)"
    # "I get carsick, so from now on never ...": a standing instruction starts a new clause
    r"|,\s+(?:(?:and|but|so)\s+)?(?=(?:from now on|going forward|always|never|please)\b)",
    re.I,
)
_ELIDED_SUBJECT = re.compile(
    r"\s*,?\s+\b(?:and|but)\s+(?=(?:also\s+|now\s+|currently\s+)?(?:work|live|prefer|like|love|enjoy|"
    r"hate|use|moved|switched|speak|have|am|started|joined)\b)",
    re.I,
)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (also at newlines, semicolons and dashes)."""
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


def clauses(sentence: str) -> list[str]:
    """A sentence cut at conjunctions that start a new first-person statement.

    "I live in Berlin and work as a nurse" -> ["I live in Berlin", "I work as a nurse"].
    """
    if sentence.rstrip().endswith("?"):
        return [sentence]
    out: list[str] = []
    for part in _CLAUSE_SPLIT.split(sentence):
        pieces = _ELIDED_SUBJECT.split(part)
        out.append(pieces[0])
        out.extend("I " + p for p in pieces[1:])
    return [c.strip() for c in out if c.strip()]


# -- words ---------------------------------------------------------------------------------------
STOPWORDS: frozenset[str] = frozenset(
    """a an the my our your his her their its this that these those of to in on at for with by
    from as is are was were be been being am do does did have has had i we you he she it they
    me us him them very really so much too also just now still currently actually anymore more
    any some and or but not no than then there here about into over under up down out off again
    lot lots quite pretty rather kind sort thing things stuff will would should could can may
    might must shall""".split()
)

PRONOUNS = frozenset("it this that them these those him her one some something stuff".split())

ADV = (
    r"(?:(?:also|now|currently|still|actually|really|just|recently|finally|usually|mostly|"
    r"generally|definitely|totally|honestly|already|officially|permanently|basically|"
    r"kind of|pretty much|much|strongly|absolutely|personally|truly|genuinely)\s+)*"
)
MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUM = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|a few|several|couple of|a couple of|\d+"
TIME_EXPR = re.compile(
    rf"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week|month|year|weekend)|"
    rf"last (?:night|week|month|year|weekend|summer|winter|spring|fall|autumn|time|{DAYS})|"
    rf"(?:{_NUM})\s+(?:days?|weeks?|months?|years?|hours?|minutes?)\s+ago|"
    rf"on (?:{DAYS})|in (?:19|20)\d\d|(?:back )?in (?:{MONTHS})(?: \d{{4}})?|earlier today|"
    rf"just now|recently|earlier this \w+|the other day)\b",
    re.I,
)
_TRAILING_QUALIFIERS = re.compile(
    rf"(?:\s+(?:{TIME_EXPR.pattern})|\s+(?:now|these days|nowadays|full[- ]time|part[- ]time|"
    r"for (?:a while|years|ages|now|good|the (?:past|last) .+)|since .+|because .+|"
    r"so .+|with my .+|as well|too|again|anymore|any more|at the moment|right now|"
    r"for a living|lately)|,.*)+$",
    re.I,
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9+#'_\-.]*[a-z0-9+#]|[a-z0-9]", re.I)


def words(text: str) -> list[str]:
    return [w.lower().strip("'.") for w in _TOKEN.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


def slug(text: str, limit: int = 3) -> str:
    """Lowercase ``a_b_c`` key from the content words of ``text`` (at most ``limit``)."""
    parts = [re.sub(r"[^a-z0-9]+", "_", w).strip("_") for w in content_words(text)]
    parts = [p for p in parts if p][:limit]
    return "_".join(parts)


def trim_value(value: str) -> str:
    """A stated value without trailing time/qualifier phrases and articles."""
    v = _TRAILING_QUALIFIERS.sub("", value.strip()).strip(" ,.;:!\"'")
    v = re.sub(r"^(?:the|a|an)\s+(?=\S)", "", v, flags=re.I) if v.lower() not in PRONOUNS else v
    return v


def value_key(value: str) -> str:
    """Comparable form of a value ("the Vim editor" == "vim editor")."""
    return " ".join(content_words(value))


def cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text
