"""First person to the speaker's name and back: what makes a memory self-contained.

A memory is read later, often by someone other than its speaker and outside its
conversation, so "I lost my job yesterday" is stored as "Jon lost Jon's job ...":
:func:`third_person` puts the speaker's name (or "the user" when no name is known) in place of
*I/me/my/mine*, "<name> and others" in place of *we/us* (with *our* as "<name>'s"), and makes
the verb that follows agree ("I have" -> "Jon has", "I love" -> "Jon loves", "I'm" -> "Jon
is"). Past tenses and modals need nothing.

:func:`first_person` reverses the leading subject ("Jon lives in Paris" -> "I live in Paris",
"Jon's editor is vim" -> "my editor is vim"), so the first-person rule table can read a
stored memory (the judge compares what two memories state); it also names the subject, since
two people's residences never supersede each other.

Example:
    >>> third_person("I've been into dancing since I was a kid", "Jon")
    'Jon has been into dancing since Jon was a kid'
    >>> first_person("Jon lives in Paris")
    ('jon', 'I live in Paris')
"""

from __future__ import annotations

import re

__all__ = ["USER", "first_person", "subject_key", "third_person", "to_third_singular"]

#: Who a memory is about when its speaker's name is unknown.
USER = "the user"

_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\s+|.", re.S)
_MODALS = frozenset(
    """can could will would shall should may might must cannot can't couldn't won't wouldn't
    shouldn't mustn't didn't wasn't weren't hadn't had was did used ought need'nt""".split()
)
#: Words that may stand between a subject and its verb.
_ADVERBS = frozenset(
    """also just still always never really actually even often usually sometimes finally
    recently already totally definitely mostly only ever truly seriously honestly basically
    literally kinda sorta certainly probably personally currently now then too rarely
    generally especially simply mainly""".split()
)
_IRREGULAR_PAST = frozenset(
    """went got had made took saw came found gave told felt thought knew left met ran began
    bought brought caught taught built sent spent lost won wrote said heard kept held sat stood
    understood fell drove flew grew threw ate drank swam sang rang chose broke spoke woke wore
    tore hid rode rose shook forgot became did was were paid laid led fed put set cut let hit
    quit hurt cost shut spread read dealt meant slept swept wept lent bent sold fought sought
    struck stuck hung dug slid lit shot split won't""".split()
)
#: Verbs a shared subject often carries after "and" ("I live in Berlin and work as a nurse").
_COORDINATED = frozenset(
    """work live love like enjoy teach study play run own have make take want need plan hope
    try go write paint read cook volunteer help use prefer speak travel spend care feel""".split()
)
_SUBJECT_PRONOUNS = frozenset("we you he she they it this that there".split())
_SPECIAL_3SG = {"am": "is", "are": "is", "have": "has", "do": "does", "don't": "doesn't"}
_SPECIAL_3SG |= {"haven't": "hasn't", "aren't": "isn't", "ain't": "isn't", "go": "goes"}
_SLANG = (
    (re.compile(r"\bgonna\b", re.I), "going to"),
    (re.compile(r"\bwanna\b", re.I), "want to"),
    (re.compile(r"\bgotta\b", re.I), "have to"),
    (re.compile(r"\bi'ma\b|\bimma\b", re.I), "I am going to"),
    (re.compile(r"\bcuz\b|\bcause\b(?! of)", re.I), "because"),
)


def to_third_singular(word: str) -> str:
    """``love`` -> ``loves``, ``study`` -> ``studies``, ``watch`` -> ``watches``; a word that is
    no present-tense base form (past, modal, ``-ing``) comes back unchanged."""
    low = word.lower()
    if low in _SPECIAL_3SG:
        out = _SPECIAL_3SG[low]
    elif (
        low in _MODALS
        or low in _IRREGULAR_PAST
        or (low.endswith("ed") and not low.endswith("eed"))
        or low.endswith(("ing", "'t", "n't"))
        or not low.isalpha()
        or len(low) < 2
    ):
        return word
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    elif low.endswith("y") and low[-2:-1] not in "aeiou":
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    return out[:1].upper() + out[1:] if word[:1].isupper() else out


def _expand(text: str) -> str:
    t = text.replace("\u2019", "'").replace("\u2018", "'")
    for rx, repl in _SLANG:
        t = rx.sub(repl, t)
    return t


def third_person(text: str, name: str) -> str:
    """``text`` with the speaker's first person replaced by ``name`` (see the module doc)."""
    tokens = _TOKEN.findall(_expand(text))
    out: list[str] = []
    agree = False  # the next verb must agree with a singular third-person subject
    singular = False  # the clause's subject is the speaker alone (for "... and work as")
    for i, tok in enumerate(tokens):
        low = tok.lower()
        if tok.isspace() or not tok[:1].isalpha():
            out.append(tok)
            if tok.strip() and tok not in ("'", '"', "&"):
                agree = False
                singular = singular and tok not in ".!?;:"
            continue
        if low in _SUBJECT_PRONOUNS:
            singular = False
        if (
            singular
            and not agree
            and low in _COORDINATED
            and _previous_word(out) in ("and", "but", "or")
        ):
            out.append(to_third_singular(tok))
            continue
        if agree:
            if low in _ADVERBS or (low.endswith("ly") and len(low) > 4):
                out.append(tok)
                continue
            if low in ("not",):
                out.append(tok)
                continue
            agree = False
            out.append(to_third_singular(tok))
            continue
        if low == "i" and tok in ("I", "i"):
            out.append(name)
            inverted = _invert_auxiliary(out)  # "do I" -> "does the user": a question
            agree = singular = not inverted and not _after_compound(out)
        elif low == "i'm":
            out.append(f"{name} is")
        elif low == "i've":
            out.append(f"{name} has")
        elif low == "i'll":
            out.append(f"{name} will")
        elif low == "i'd":
            nxt = _next_word(tokens, i)
            had = nxt.endswith("ed") or nxt in ("been", "gone", "done", "seen", "had", "got")
            out.append(f"{name} {'had' if had else 'would'}")
        elif low in ("me",):
            out.append(name)
        elif low in ("my", "mine"):
            out.append(f"{name}'s")
        elif low == "myself":
            out.append("themselves")
        elif low == "we":
            out.append(f"{name} and others")
        elif low in ("we're", "we've", "we'll", "we'd"):
            verb = {"we're": "are", "we've": "have", "we'll": "will", "we'd": "would"}[low]
            out.append(f"{name} and others {verb}")
        elif low == "us" and tok == tok.lower():
            out.append(f"{name} and others")
        elif low in ("our", "ours"):
            out.append(f"{name}'s")
        elif low == "ourselves":
            out.append("themselves")
        else:
            out.append(tok)
    result = "".join(out)
    return result[:1].upper() + result[1:]


_INVERTED = {"do": "does", "am": "is", "have": "has", "don't": "doesn't", "haven't": "hasn't"}
_AUXILIARIES = frozenset(
    "does did can could will would should shall may might must was is has".split()
) | frozenset(_INVERTED)


def _invert_auxiliary(out: list[str]) -> bool:
    """Make an auxiliary before the name agree ("do I" -> "does <name>"); True if there was
    one (then the verb after the name stays in its base form)."""
    for k in range(len(out) - 2, -1, -1):
        if not out[k].strip():
            continue
        low = out[k].lower()
        if low not in _AUXILIARIES:
            return False
        new = _INVERTED.get(low, low)
        out[k] = new[:1].upper() + new[1:] if out[k][:1].isupper() else new
        return True
    return False


def _previous_word(out: list[str]) -> str:
    for tok in reversed(out):
        if tok.strip():
            return tok.lower()
    return ""


def _next_word(tokens: list[str], i: int) -> str:
    for tok in tokens[i + 1 :]:
        if tok[:1].isalpha():
            return tok.lower()
    return ""


def _after_compound(out: list[str]) -> bool:
    """True when the name just placed ends a compound subject ("Mel and I"): plural verb."""
    words = [t for t in out[:-1] if t.strip()]
    return len(words) >= 2 and words[-1].lower() in ("and", "or") and words[-2][:1].isalnum()


_SUBJECT = re.compile(
    r"^(?P<subj>[Tt]he user|[A-Z][\w\-]*(?: [A-Z][\w\-]*){0,2})(?P<poss>'s?)?"
    r"(?P<others> and others)?\s+(?P<rest>\S.*)$",
    re.S,
)
_BASE = {"is": "am", "has": "have", "does": "do", "doesn't": "don't", "hasn't": "haven't"}
_BASE |= {"isn't": "am not", "was": "was", "goes": "go"}


def _to_base(word: str) -> str:
    low = word.lower()
    if low in _BASE:
        return _BASE[low]
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "y"
    if low.endswith(("shes", "ches", "xes", "zes", "sses", "oes")):
        return low[:-2]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return low[:-1]
    return word


def subject_key(name: str) -> str:
    """The key part naming a person: ``user`` for the unnamed user, else the name's slug."""
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return "user" if slug in ("the_user", "user", "") else slug


def first_person(text: str) -> tuple[str | None, str]:
    """(subject key, the statement in the first person); (None, text) when no named or
    "the user" subject leads it."""
    m = _SUBJECT.match(text.strip())
    if m is None:
        return None, text
    subj = m["subj"]
    rest = m["rest"]
    if m["others"]:
        return subject_key(subj), f"we {rest}"
    if m["poss"]:
        return subject_key(subj), f"my {rest}"
    head, _, tail = rest.partition(" ")
    skipped: list[str] = []
    while head.lower() in _ADVERBS and tail:
        skipped.append(head)
        head, _, tail = tail.partition(" ")
    verb = _to_base(head)
    low = head.lower()
    if verb == head and low not in _MODALS | _IRREGULAR_PAST and not low.endswith("ed"):
        return None, text  # "Berlin nice ...": no verb after the name
    words = ["I", *skipped, verb, tail] if tail else ["I", *skipped, verb]
    fp = " ".join(words)
    fp = re.sub(rf"\b{re.escape(subj)}'s\b", "my", fp)
    return subject_key(subj), fp
