"""Rules of the offline extractor: first-person statements -> frames with topic keys.

A *frame* is what one clause says: a rule name, a memory type, the value it states and, for
single-valued attributes only (where the user lives, their editor, how answers should be
formatted), a topic key. A topic key means "a newer statement replaces an older one", so
rules that describe things a person can have many of (hobbies, pets, events) give none.

Topic keys are dotted, lowercase and built from a small table of subject patterns
(``user.residence``, ``user.employer``, ``user.editor``, ``instruction.language`` ...), a
lexicon mapping tools to categories ("emacs" -> ``user.editor``), and a generic fallback on
the subject noun phrase ("my budget is 500 EUR" -> ``user.budget``).

This is deliberately a heuristic (recorded as ``offline-heuristic-v1`` on each memory): it
favours precision, so statements outside its patterns are not extracted at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
        if lead:
            t = t[lead.end() :].strip() + " " + lead["when"]
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
    r"\s*,?\s+\b(?:and|but|plus|and also|so)\s+(?=(?:i|we|my|our)\b)|,\s+(?=(?:i|my)\s)", re.I
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


# -- vocabulary --------------------------------------------------------------------------------
STOPWORDS: frozenset[str] = frozenset(
    """a an the my our your his her their its this that these those of to in on at for with by
    from as is are was were be been being am do does did have has had i we you he she it they
    me us him them very really so much too also just now still currently actually anymore more
    any some and or but not no than then there here about into over under up down out off again
    lot lots quite pretty rather kind sort thing things stuff will would should could can may
    might must shall""".split()
)

#: Value -> category, for topic keys of tools and other single-choice preferences.
CATEGORIES: dict[str, frozenset[str]] = {
    "editor": frozenset(
        """vim neovim nvim emacs vscode vs-code sublime atom intellij pycharm nano helix zed cursor
        webstorm goland notepad++ kate gedit textmate xcode jetbrains spacemacs doom-emacs
        lazyvim""".split()
    )
    | {"vs code", "visual studio code", "sublime text", "android studio", "doom emacs"},
    "shell": frozenset("bash zsh fish powershell nushell ksh tcsh".split()),
    "os": frozenset(
        "linux ubuntu debian fedora arch macos osx windows nixos freebsd manjaro".split()
    )
    | {"mac os", "arch linux", "linux mint", "windows 11", "windows 10"},
    "programming_language": frozenset(
        """python rust golang java javascript typescript ruby c++ c# kotlin swift haskell elixir
        scala php perl lua julia dart clojure ocaml zig nim""".split()
    ),
    "package_manager": frozenset(
        "pip uv poetry conda pipenv pdm hatch npm yarn pnpm bun homebrew brew".split()
    ),
    "browser": frozenset("firefox chrome chromium safari edge brave opera vivaldi".split())
    | {"google chrome"},
    "database": frozenset(
        """postgres postgresql mysql mariadb sqlite mongodb mongo redis cassandra dynamodb duckdb
        clickhouse elasticsearch""".split()
    )
    | {"sql server"},
    "cloud": frozenset("aws gcp azure digitalocean hetzner heroku vercel netlify".split())
    | {"google cloud", "amazon web services"},
    "drink": frozenset("tea coffee espresso decaf matcha cocoa".split())
    | {"green tea", "black tea", "hot chocolate"},
    "phone": frozenset("iphone android pixel".split()),
    "terminal": frozenset("iterm iterm2 alacritty kitty wezterm warp ghostty".split()),
    "note_app": frozenset("notion obsidian evernote onenote logseq".split()),
    "theme": frozenset() | {"dark mode", "light mode", "dark theme", "light theme"},
    "indentation": frozenset("tabs spaces".split()),
    "test_framework": frozenset("pytest unittest jest mocha vitest".split()),
}
_CATEGORY_OF: dict[str, str] = {v: cat for cat, vals in CATEGORIES.items() for v in vals}
_LABELS: dict[str, str] = {
    "editor": "editor",
    "shell": "shell",
    "os": "operating system",
    "programming_language": "programming language",
    "package_manager": "package manager",
    "browser": "browser",
    "database": "database",
    "cloud": "cloud provider",
    "drink": "drink",
    "phone": "phone",
    "terminal": "terminal",
    "note_app": "notes app",
    "theme": "theme",
    "indentation": "indentation",
    "test_framework": "test framework",
    "color": "colour",
}
#: Subject phrases ("my favourite X", "my X is") that name a category or a known attribute.
_SUBJECTS: dict[str, str] = {
    "editor": "editor",
    "text editor": "editor",
    "code editor": "editor",
    "ide": "editor",
    "shell": "shell",
    "os": "os",
    "operating system": "os",
    "programming language": "programming_language",
    "coding language": "programming_language",
    "package manager": "package_manager",
    "browser": "browser",
    "web browser": "browser",
    "database": "database",
    "db": "database",
    "cloud": "cloud",
    "cloud provider": "cloud",
    "drink": "drink",
    "beverage": "drink",
    "hot drink": "drink",
    "phone": "phone",
    "terminal": "terminal",
    "note app": "note_app",
    "notes app": "note_app",
    "note-taking app": "note_app",
    "theme": "theme",
    "color": "color",
    "colour": "color",
    "test framework": "test_framework",
    # attributes with their own keys
    "company": "employer",
    "employer": "employer",
    "workplace": "employer",
    "job": "occupation",
    "role": "occupation",
    "title": "occupation",
    "job title": "occupation",
    "position": "occupation",
    "profession": "occupation",
    "occupation": "occupation",
    "hometown": "origin",
    "home town": "origin",
    "email": "email",
    "e-mail": "email",
    "email address": "email",
    "e-mail address": "email",
    "phone number": "phone_number",
    "mobile number": "phone_number",
    "number": "phone_number",
    "cell number": "phone_number",
    "address": "address",
    "home address": "address",
    "name": "name",
    "first name": "name",
    "last name": "last_name",
    "surname": "last_name",
    "birthday": "birthday",
    "date of birth": "birthday",
    "time zone": "timezone",
    "timezone": "timezone",
    "age": "age",
    "diet": "diet",
    "native language": "native_language",
    "mother tongue": "native_language",
    "first language": "native_language",
    "github": "github",
    "github handle": "github",
    "github username": "github",
    "username": "username",
    "handle": "username",
}
_RELATIONS = frozenset(
    """wife husband partner girlfriend boyfriend fiance fiancee son daughter mother father mom
    mum dad brother sister boss manager dog cat kid child baby grandmother grandfather grandma
    grandpa aunt uncle cousin roommate flatmate friend best-friend colleague cofounder
    co-founder""".split()
)
_VAGUE_SUBJECTS = frozenset(
    """problem question point issue guess bad fault concern thought idea understanding hope
    worry pleasure apologies apology bet advice suggestion answer opinion feeling sense take
    plan""".split()
)
_PRONOUNS = frozenset("it this that them these those him her one some something stuff".split())
_PROFESSIONS = re.compile(
    r"(?:engineer|developer|programmer|nurse|teacher|doctor|designer|manager|student|lawyer|"
    r"scientist|researcher|analyst|consultant|writer|architect|accountant|chef|officer|"
    r"director|founder|ceo|cto|cfo|coo|intern|professor|physician|pharmacist|artist|musician|"
    r"photographer|journalist|administrator|admin|technician|mechanic|electrician|plumber|"
    r"salesperson|marketer|recruiter|therapist|dentist|veterinarian|vet|pilot|driver|farmer|"
    r"baker|cook|waiter|waitress|cashier|clerk|librarian|translator|entrepreneur|freelancer|"
    r"contractor|specialist|lead|owner|paramedic|firefighter|surgeon|economist|statistician|"
    r"editor|producer|actor|actress|dancer|coach|trainer|tutor|lecturer|postdoc|phd student|"
    r"sre|devops|tester|qa|scrum master|product owner|data scientist)s?$",
    re.I,
)
_DIETS = (
    r"vegetarian|vegan|pescatarian|pescetarian|flexitarian|carnivore|omnivore|keto|paleo|"
    r"gluten[- ]free|lactose[- ]intolerant|kosher|halal|plant[- ]based"
)
_LANGUAGES = frozenset(
    """english german french spanish portuguese italian dutch polish swedish norwegian danish
    finnish russian ukrainian chinese mandarin cantonese japanese korean arabic hebrew turkish
    greek hindi czech hungarian romanian""".split()
)
_ACTION_VERBS = (
    r"use|add|include|write|reply|respond|answer|format|mention|call|put|say|apologi[sz]e|"
    r"suggest|recommend|ask|show|print|change|touch|commit|push|delete|remove|run|make|give|"
    r"send|start|end|sign|cite|explain|translate|summari[sz]e|bold|capitali[sz]e|abbreviate|"
    r"repeat|list|number|indent|wrap|comment|document|test|deploy|merge|rebase|email|message|"
    r"contact|schedule|book|speak|talk|address|refer|keep|avoid|assume|shorten|lengthen|be"
)
_ADV = (
    r"(?:(?:also|now|currently|still|actually|really|just|recently|finally|usually|mostly|"
    r"generally|definitely|totally|honestly|already|officially|permanently|basically|"
    r"kind of|pretty much|much|strongly|absolutely|personally|truly|genuinely)\s+)*"
)
_MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUM = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|a few|several|couple of|a couple of|\d+"
TIME_EXPR = re.compile(
    rf"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week|month|year|weekend)|"
    rf"last (?:night|week|month|year|weekend|summer|winter|spring|fall|autumn|time|{_DAYS})|"
    rf"(?:{_NUM})\s+(?:days?|weeks?|months?|years?|hours?|minutes?)\s+ago|"
    rf"on (?:{_DAYS})|in (?:19|20)\d\d|(?:back )?in (?:{_MONTHS})(?: \d{{4}})?|earlier today|"
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
    v = re.sub(r"^(?:the|a|an)\s+(?=\S)", "", v, flags=re.I) if v.lower() not in _PRONOUNS else v
    return v


def value_key(value: str) -> str:
    """Comparable form of a value ("the Vim editor" == "vim editor")."""
    return " ".join(content_words(value))


def category(value: str) -> str | None:
    """The lexicon category of a value phrase (longest match in its first words)."""
    ws = words(value)[:5]
    for n in (3, 2, 1):
        for i in range(0, max(len(ws) - n + 1, 0)):
            gram = " ".join(ws[i : i + n])
            if gram in _CATEGORY_OF:
                return _CATEGORY_OF[gram]
            if gram.replace(" ", "-") in _CATEGORY_OF:
                return _CATEGORY_OF[gram.replace(" ", "-")]
    if len(ws) == 1 and ws[0] == "go":
        return "programming_language"
    return None


def label(cat: str) -> str:
    return _LABELS.get(cat, cat.replace("_", " "))


def cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


# -- frames ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Frame:
    """What one first-person clause states.

    Attributes:
        rule: Name of the rule that matched.
        memory_type: fact, preference, decision, note, event, instruction or task.
        content: The memory as a standalone first-person sentence.
        value: The stated value (for comparisons by the judge).
        topic_key: Set for single-valued attributes only (a newer one supersedes).
        keywords: Search terms for the memory.
        queries: Questions the memory answers.
        polarity: False for negated statements ("I no longer like coffee").
        scope: ``user`` or ``session`` (tasks are session-scoped).
    """

    rule: str
    memory_type: str
    content: str
    value: str
    topic_key: str | None = None
    keywords: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    polarity: bool = True
    scope: str = "user"


_SKIP = re.compile(
    r"^(?:if|unless|maybe|perhaps|suppose|supposing|imagine|what if|i wonder|i think|i guess|"
    r"i suppose|i feel like|i am not sure|i do not know|i doubt|i hope|i wish|"
    r"i would(?! prefer| rather| like you)|i could|i might|i may|would|could|should i|can i|"
    r"do i|did i|am i|have i|was i|what|where|when(?! (?:you )?(?:answer|reply|respond|writ|"
    r"talk|explain|suggest|review|summari))|why|how|who|which|is it|are you|can you|"
    r"could you|would you|do you|"
    r"did you|will you|have you|tell me|show me|give me|let me know|i am wondering|i said)\b",
    re.I,
)
_REQUESTS = re.compile(r"^(?:can|could|would|will) you (?:please )?(?=remind me\b)", re.I)

_RULES: list[tuple[str, re.Pattern[str], Callable[[re.Match[str], str], Frame | None]]] = []


def _rule(
    name: str, pattern: str
) -> Callable[
    [Callable[[re.Match[str], str], Frame | None]], Callable[[re.Match[str], str], Frame | None]
]:
    rx = re.compile(pattern, re.I)

    def deco(
        fn: Callable[[re.Match[str], str], Frame | None],
    ) -> Callable[[re.Match[str], str], Frame | None]:
        _RULES.append((name, rx, fn))
        return fn

    return deco


def _kw(clause: str, *extra: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for w in (*extra, *content_words(clause)):
        if w and len(w) > 2:
            seen.setdefault(w.lower(), None)
    return tuple(list(seen)[:10])


def _with_source(canonical: str, clause: str) -> str:
    if value_key(canonical) == value_key(clause):
        return cap(clause)
    return f"{cap(canonical)} ({cap(clause)})"


# Rules run in order; the first that returns a frame wins.
@_rule(
    "name",
    r"^(?:my name is|i am called|people call me|please call me|call me|i go by|"
    r"you can call me|my name's) (?P<v>[a-z][\w'\-]*(?: [a-z][\w'\-]*){0,2})$",
)
def _name(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"]
    if not v[:1].isupper() or v.lower() in _PRONOUNS:
        return None
    return Frame(
        "name",
        "fact",
        f"My name is {v}",
        v,
        "user.name",
        _kw(clause, "name"),
        ("what is my name", "what is the user's name"),
    )


@_rule("age", r"^i am (?P<v>\d{1,3})(?: years? old)?$|^i (?:just )?turned (?P<w>\d{1,3})\b.*$")
def _age(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"] or m["w"]
    return Frame(
        "age",
        "fact",
        _with_source(f"I am {v} years old", clause),
        v,
        "user.age",
        _kw(clause, "age", "old"),
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
        _kw(clause, "birthday"),
        ("when is my birthday",),
    )


@_rule("birthplace", r"^i was born in (?P<v>.+)$")
def _birthplace(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    key = "user.birth_year" if re.fullmatch(r"(?:19|20)\d\d", v) else "user.birthplace"
    return Frame(
        "birthplace", "fact", cap(clause), v, key, _kw(clause, "born"), ("where was I born",)
    )


@_rule(
    "residence_move",
    rf"^(?:i|we) {_ADV}(?:have |had )?(?:moved|relocated|emigrated)"
    r"(?: back| over| out)? (?:to|into) (?P<v>.+)$",
)
def _moved(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v or category(v) is not None or v.lower() in _PRONOUNS:
        return None  # "I moved to emacs" is a tool switch (handled by the switch rule)
    return Frame(
        "residence",
        "fact",
        _with_source(f"I live in {v}", clause),
        v,
        "user.residence",
        _kw(clause, "live", "home", "residence", "city"),
        ("where do I live", "where does the user live", "which city is home"),
    )


@_rule(
    "residence",
    rf"^(?:i|we) {_ADV}(?:live|reside|am living|are living|am staying|stay|"
    r"am based|are based|am located) in (?P<v>.+)$|^(?:my|our) (?:home|house|apartment|flat|"
    r"place) is in (?P<w>.+)$|^(?:i|we) (?:now )?call (?P<x>.+) home$",
)
def _residence(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"] or m["x"])
    if not v or v.lower() in _PRONOUNS or v.lower().startswith(("the moment", "fear", "hope")):
        return None
    return Frame(
        "residence",
        "fact",
        _with_source(f"I live in {v}", clause),
        v,
        "user.residence",
        _kw(clause, "live", "home", "residence", "city"),
        ("where do I live", "where does the user live", "which city is home"),
    )


@_rule("origin", r"^i (?:am|come) (?:originally )?from (?P<v>.+)$|^i grew up in (?P<w>.+)$")
def _origin(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in _PRONOUNS:
        return None
    return Frame(
        "origin",
        "fact",
        cap(clause),
        v,
        "user.origin",
        _kw(clause, "origin", "hometown"),
        ("where am I from", "where did I grow up"),
    )


@_rule(
    "employer",
    rf"^i {_ADV}(?:work|am working|have been working) (?:at|for) (?P<v>.+?)"
    r"(?: as (?:a |an )?(?P<role>.+))?$|^i " + _ADV + r"(?:joined|have joined|started "
    r"(?:working )?at|started a (?:new )?job at|got a (?:new )?job at|am employed (?:at|by)|"
    r"took a (?:new )?job at) (?P<w>.+)$",
)
def _employer(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in _PRONOUNS or v.lower().startswith(("home", "myself")):
        return None
    canonical = f"I work at {v}" + (f" as {trim_value(m['role'])}" if m["role"] else "")
    return Frame(
        "employer",
        "fact",
        _with_source(canonical, clause),
        v,
        "user.employer",
        _kw(clause, "work", "employer", "job", "company"),
        ("where do I work", "who is my employer", "which company do I work for"),
    )


@_rule(
    "occupation",
    rf"^i {_ADV}(?:work|am working) as (?:a |an )?(?P<v>.+)$|^i {_ADV}"
    r"(?:am|became|have become|am now) (?:a |an )(?P<w>(?:[\w\-]+ ){0,3}[\w\-]+)$",
)
def _occupation(m: re.Match[str], clause: str) -> Frame | None:
    if m["w"] is not None:
        v = trim_value(m["w"])
        if re.fullmatch(_DIETS, v, re.I):
            return None
        if not _PROFESSIONS.search(v):
            return None
    else:
        v = trim_value(m["v"])
    if not v:
        return None
    return Frame(
        "occupation",
        "fact",
        _with_source(f"I work as {_article(v)}", clause),
        v,
        "user.occupation",
        _kw(clause, "job", "occupation", "work"),
        ("what is my job", "what do I do for work"),
    )


def _article(v: str) -> str:
    return ("an " if v[:1].lower() in "aeiou" else "a ") + v


@_rule(
    "diet",
    rf"^i {_ADV}(?:am|have been|have become|became|went|eat) (?:a |an |fully |strict )?"
    rf"(?:strict )?(?P<v>{_DIETS})\b[^,]*$",
)
def _diet(m: re.Match[str], clause: str) -> Frame | None:
    v = m["v"].lower()
    return Frame(
        "diet",
        "preference",
        cap(clause),
        v,
        "user.diet",
        _kw(clause, "diet", "food", "eat"),
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
        _kw(clause, "allergy", "allergic"),
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
        _kw(clause, verb, "diet"),
        (f"do I {verb} {v}",),
        polarity=m["verb"] is None,
    )


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
    cat = _SUBJECTS.get(s)
    key = f"user.{cat}" if cat is not None else f"user.favorite.{slug(s)}"
    lbl = label(cat) if cat is not None else s
    return Frame(
        "favourite",
        "preference",
        _with_source(f"My favourite {lbl} is {v}", clause),
        v,
        key,
        _kw(clause, "favourite", "favorite", lbl),
        (f"what is my favourite {lbl}", f"which {lbl} do I prefer"),
    )


@_rule(
    "switch",
    rf"^(?:i|we) {_ADV}(?:have |had )?(?:switched|moved|migrated|changed|converted|"
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
            _kw(clause, "switched", "use"),
            (f"what do I use instead of {m['old']}" if m["old"] else f"do I use {v}",),
        )
    lbl = label(cat)
    return Frame(
        "switch",
        "preference",
        _with_source(f"I use {v} as my {lbl}", clause),
        v,
        f"user.{cat}",
        _kw(clause, lbl, "use"),
        (f"which {lbl} do I use", f"what is my {lbl}"),
    )


@_rule(
    "use",
    rf"^(?:i|we) {_ADV}(?:use|am using|are using|have been using|started using|"
    r"rely on|work in|code in|program in|write code in|develop in|write|run) "
    r"(?P<v>.+?)(?: (?:for|as) (?:my |our |a |an )?(?P<purpose>.+))?$",
)
def _use(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v or v.lower() in _PRONOUNS:
        return None
    cat = category(v)
    verb = clause.lower().split()[1:2]
    if cat is None and verb in (["write"], ["run"]):
        return None  # "I write poems", "I run marathons": not tool use
    if cat is None and m["purpose"]:
        cat_p = _SUBJECTS.get(m["purpose"].lower().strip())
        key = f"user.{cat_p}" if cat_p else f"user.tool.{slug(m['purpose'])}"
        return Frame(
            "use",
            "fact",
            cap(clause),
            v,
            key,
            _kw(clause, "use", "tool"),
            (f"what do I use for {m['purpose']}",),
        )
    if cat is None:
        return Frame(
            "use", "fact", cap(clause), v, None, _kw(clause, "use", "tool"), (f"do I use {v}",)
        )
    lbl = label(cat)
    return Frame(
        "use",
        "fact",
        _with_source(f"I use {v} as my {lbl}", clause),
        v,
        f"user.{cat}",
        _kw(clause, lbl, "use"),
        (f"which {lbl} do I use", f"what is my {lbl}"),
    )


@_rule(
    "prefer",
    rf"^(?:i|we) {_ADV}(?:prefer|would prefer|favou?r|would rather have|"
    r"would rather use|like better|go for) (?P<v>.+?)(?: (?:over|to|rather than|instead of|"
    r"than|versus|vs\.?) (?P<alt>.+))?$",
)
def _prefer(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    alt = trim_value(m["alt"]) if m["alt"] else None
    if not v or v.lower() in _PRONOUNS:
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
        head = _head(v)
        key = f"user.preference.{head}" if head else None
        queries = (f"what {head or v} do I prefer",)
    return Frame("prefer", "preference", cap(clause), v, key, _kw(clause, "prefer"), queries)


def _head(phrase: str) -> str:
    """The head of a noun phrase (its last content word), or the verb of "to <verb> ..."."""
    ws = content_words(phrase)
    if not ws:
        return ""
    if phrase.lower().startswith("to "):
        return re.sub(r"[^a-z0-9]+", "_", ws[0]).strip("_")
    return re.sub(r"[^a-z0-9]+", "_", ws[-1]).strip("_")


_LIKE_VERBS = (
    r"like|love|enjoy|adore|hate|dislike|detest|loathe|cannot stand|can not stand|am into|"
    r"am a (?:big |huge )?fan of|am not a (?:big )?fan of|am not into"
)


@_rule(
    "likes",
    rf"^i {_ADV}(?P<neg>do not |no longer |never |do not really |stopped )?"
    rf"(?:really )?(?P<verb>{_LIKE_VERBS}|liking|loving|enjoying) (?P<v>.+)$",
)
def _likes(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    v = re.sub(r"\s+(?:a lot|very much|so much|anymore|any more|at all)$", "", v, flags=re.I)
    if not v or v.lower() in _PRONOUNS or v.lower().startswith(("to know", "you", "it when")):
        return None
    verb = m["verb"].lower()
    negative = verb in {"hate", "dislike", "detest", "loathe", "cannot stand", "can not stand"}
    negative = negative or verb.startswith(("am not",))
    if m["neg"]:
        negative = not negative
    key = slug(v, 3)
    if not key:
        return None
    return Frame(
        "likes",
        "preference",
        cap(clause),
        v,
        f"user.likes.{key}",
        _kw(clause, "like", "enjoy"),
        (f"do I like {v}", "what do I like"),
        polarity=not negative,
    )


@_rule("speaks", r"^i (?:also )?speak (?P<v>.+)$")
def _speaks(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not any(w in _LANGUAGES for w in words(v)):
        return None
    return Frame(
        "speaks",
        "fact",
        cap(clause),
        v,
        "user.spoken_languages",
        _kw(clause, "language", "speak"),
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
        _kw(clause, "relationship"),
        ("am I married",),
    )


@_rule("drives", r"^i (?:now )?(?:drive|own) (?:a|an) (?P<v>.+)$")
def _drives(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"])
    if not v:
        return None
    key = "user.car" if clause.lower().split()[1:2] == ["drive"] else None
    return Frame("owns", "fact", cap(clause), v, key, _kw(clause, "car"), (f"do I own {v}",))


# -- instructions, decisions, tasks --------------------------------------------------------------
_PERSISTENT = (
    r"always|never|from now on|going forward|in (?:the )?future|henceforth|by default|"
    r"every time|whenever possible|each time|at all times|in all (?:your )?(?:answers|replies)"
)
_ASPECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("language", re.compile(r"\b(?:in|to) (?:" + "|".join(sorted(_LANGUAGES)) + r")\b", re.I)),
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
        _kw(clause, "instruction", "always"),
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
        _kw(clause, "instruction"),
        ("how should you answer", f"instructions about {aspect}"),
    )


@_rule(
    "style", r"^(?:please )?(?:keep|use|answer|reply|respond|talk|speak|format|stick|write|be)\b.+$"
)
def _style(m: re.Match[str], clause: str) -> Frame | None:
    return style_instruction(clause)


@_rule("born", r"^my (?P<s>[a-z][\w\- ]*?) was born (?P<v>.+)$")
def _born(m: re.Match[str], clause: str) -> Frame | None:
    return Frame(
        "born",
        "event",
        cap(clause),
        m["v"],
        None,
        _kw(clause, "born", "birth"),
        (f"when was my {m['s']} born",),
    )


@_rule(
    "decision",
    rf"^(?:we|i|the team|our team) {_ADV}(?:have |had )?(?:decided|agreed|chose|"
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
        _kw(clause, "decided", "decision"),
        ("what did we decide", f"what did we decide about {_head(v) or v}"),
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
        _kw(clause, "todo", "task", "remind"),
        ("what do I need to do", "what are my open tasks"),
        scope="session",
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


@_rule("event", rf"^(?:i|we) {_ADV}(?P<verb>{_EVENT_VERBS}) (?P<v>.+)$")
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
        _kw(clause, m["verb"].lower()),
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
        _kw(clause, "name", s),
        (f"what is my {s}'s name",),
    )


@_rule(
    "my_x_is",
    r"^(?:my|our) (?P<s>(?:[a-z][\w'\-]* ){0,3}?[a-z][\w'\-]*) (?:is|are) "
    r"(?:now |still |currently |actually )?(?P<v>.+)$",
)
def _my_x_is(m: re.Match[str], clause: str) -> Frame | None:
    s = m["s"].lower().strip()
    v = trim_value(m["v"])
    head = s.split()[-1]
    if not v or head in _VAGUE_SUBJECTS or v.lower().startswith(("that ", "to ", "not ", "so ")):
        return None
    if v.lower() in _PRONOUNS or re.match(r"^(?:going|coming|doing|trying|being)\b", v, re.I):
        return None  # "my sister is coming" is no attribute
    if head in _RELATIONS or s.replace(" ", "-") in _RELATIONS:
        is_name = v[:1].isupper() and len(v.split()) <= 3 and category(v) is None
        key = f"user.{slug(s, 2)}.name" if is_name else None
        return Frame("relation", "fact", cap(clause), v, key, _kw(clause, s), (f"who is my {s}",))
    mapped = _SUBJECTS.get(s)
    key = f"user.{mapped}" if mapped is not None else f"user.{slug(s)}"
    if key == "user.":
        return None
    mtype = "preference" if mapped in CATEGORIES or mapped == "color" else "fact"
    return Frame("my_x_is", mtype, cap(clause), v, key, _kw(clause, s), (f"what is my {s}",))


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
    return Frame("has", "fact", cap(clause), v, None, _kw(clause), (f"do I have {v}",))


@_rule(
    "ongoing",
    r"^(?:i|we) am (?:currently |still )?(?:learning|studying|training for|working "
    r"on|building|writing|preparing for|saving for|renovating|raising) (?P<v>.+)$|^(?:we|i) "
    r"are (?:currently |still )?(?:learning|studying|training for|working on|building|"
    r"preparing for|migrating|renovating) (?P<w>.+)$",
)
def _ongoing(m: re.Match[str], clause: str) -> Frame | None:
    v = trim_value(m["v"] or m["w"])
    if not v or v.lower() in _PRONOUNS:
        return None
    return Frame("ongoing", "fact", cap(clause), v, None, _kw(clause), ("what am I working on",))


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
        _kw(clause, "timezone"),
        ("what is my time zone",),
    )


# -- entry points ------------------------------------------------------------------------------
def parse_clause(raw: str) -> Frame | None:
    """The frame of one clause, or None when no rule matches (questions never match)."""
    stripped = raw.strip()
    if not stripped or (stripped.endswith("?") and not _REQUESTS.match(stripped)):
        return None
    clause = _REQUESTS.sub("", normalise(stripped))
    if len(clause) < 4 or len(clause) > 300:
        return None
    if _SKIP.match(clause) and not _REQUESTS.match(stripped):
        return None
    first = clause.split(maxsplit=1)[0].lower().rstrip(":,")
    if first not in {
        "i",
        "we",
        "my",
        "our",
        "please",
        "always",
        "never",
        "from",
        "going",
        "in",
        "by",
        "every",
        "each",
        "when",
        "do",
        "don't",
        "stop",
        "avoid",
        "call",
        "you",
        "make",
        "be",
        "remind",
        "keep",
        "use",
        "answer",
        "reply",
        "respond",
        "talk",
        "speak",
        "format",
        "stick",
        "write",
        "remember",
        "add",
        "note",
        "todo",
        "to-do",
        "to",
        "let",
        "the",
        "people",
        "henceforth",
        "at",
        "whenever",
    }:
        return None
    for _name, rx, fn in _RULES:
        m = rx.match(clause)
        if m is None:
            continue
        frame = fn(m, clause)
        if frame is not None:
            return frame
    return None


def frames(text: str) -> Iterator[tuple[str, Frame]]:
    """(clause, frame) for every clause of ``text`` that states something."""
    for sentence in sentences(text):
        for clause in clauses(sentence):
            frame = parse_clause(clause)
            if frame is not None:
                yield clause, frame
