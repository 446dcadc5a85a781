"""The offline extractor: a person's statements in a conversation -> self-contained memories.

For every turn written by a person (role ``user``, or any turn with a speaker name: in a chat
between people every participant states things), sentence by sentence:

1. **Clean**: greetings, interjections and vocatives go ("Hey Gina! Wow, ..."); a leading
   "Name:" that repeats (or, without a known speaker, gives) the speaker is dropped
   (:func:`agentmem.speakers.resolve_speaker`, the rule every reader of a message uses).
2. **Keep statements about the speaker or someone named**: sentences in the first person
   (including informal ones without a subject, "Lost my job yesterday"), or whose subject is
   a named person ("Tom is allergic to shellfish"). Questions, sentences about the listener
   ("you ...") and remarks without content ("That's so cool!") are dropped.
3. **Require substance**: at least ``min_substance`` content words that are not small talk
   (see :data:`SMALL_TALK`); standing instructions and constraints (diet, allergies,
   health) always pass.
4. **Type and key** with the rule table (:mod:`agentmem.llm.offline.rules`): residence,
   work, diet, allergy, instruction, decision, task, ... with topic keys for single-valued
   attributes; otherwise a preference (likes, loves, prefers ...), an event (a past action,
   or anything dated) or a fact.
5. **Make it self-contained**: relative dates resolved against the message time
   (:mod:`.dates`), then the first person replaced by the speaker's name, or "the user"
   (:mod:`.perspective`). Topic keys name their person (``jon.residence``; ``user.residence``
   for the unnamed user), so two speakers never supersede each other's facts.

Consecutive plain statements of one turn (facts, preferences and events without a topic
key) are merged into one memory of up to :data:`MERGE_WORDS` words: a turn usually tells one story,
and one memory per story keeps the store (and a summary) free of fragments.

Example:
    >>> from datetime import datetime
    >>> from agentmem.llm.base import ChatTurn
    >>> [m] = extract([ChatTurn("user", "Lost my job as a banker yesterday.", id="D1:2",
    ...                          speaker="Jon", time=datetime(2023, 1, 20))])
    >>> (m.content, m.memory_type, m.source_ids)
    ("Jon lost Jon's job as a banker on 19 January 2023.", 'event', ('D1:2',))
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ...speakers import LABEL_WORDS, resolve_speaker
from ..base import ChatTurn, Extracted
from . import rules
from .dates import has_relative_date, resolve
from .perspective import USER, subject_key, third_person
from .text import TIME_EXPR, cap, clauses, content_words, sentences

__all__ = [
    "MERGE_WORDS",
    "MIN_SUBSTANCE",
    "SMALL_TALK",
    "Statement",
    "clean",
    "extract",
    "keep",
    "speaker_of",
    "statements",
    "substance",
]

#: Content words (beyond small talk) a plain statement needs to be kept.
MIN_SUBSTANCE = 2
#: Longest memory that merging consecutive statements of one turn may build.
MERGE_WORDS = 45

#: Words that carry no memory on their own: reactions, fillers, vague nouns and verbs.
SMALL_TALK = frozenset(
    """awesome amazing great cool nice good fun wow love loved loving like liked glad happy
    excited exciting thanks thank really totally definitely sure know knew think thought mean
    feel felt hope wait see saw guess bet agree true right yeah yes absolutely congrats
    congratulations proud sorry hear heard sound sounds sounded lot lots much always never
    thing things stuff time times day days way life people everything something anything
    nothing super pretty kinda gonna lol haha omg hey hi hello bye talk talking chat catch
    later soon forward look looks looking looked keep going get gets getting got make makes
    made go goes went do did does done doing be been being can could would should will also
    too well oh ah sweet lovely beautiful wonderful incredible fantastic inspiring inspired
    special meaningful important appreciate appreciated support supportive care caring friend
    friends glad awesome blast cute fab fave wonderful stunning gorgeous impressive
    incredible perfect favorite favourite today tonight yesterday week month year glad
    tell told let lets hang awesome enjoy enjoyed enjoying idea ideas cheers keen reminds
    remind reminded totally one ones kind sort part moment moments experience experiences
    wish wished bit little big whole real actually want wanted wants need needs needed take
    taking took give gave wow yay ugh hmm dear man dude buddy pal happen happened happens
    going gone come came coming i'm i've i'd i'll we're we've we'd we'll it's that's
    there's let's can't don't didn't isn't wasn't won't doesn't haven't user's""".split()
)

_GREETING = re.compile(
    r"^(?:(?:hey|hi|hello|hiya|yo|wow|whoa|woah|yeah|yes|yep|yup|nope|no|oh|ooh|aw+|haha+|"
    r"hah|lol|omg|thanks|thank you|thx|ok|okay|well|so|and|but|also|btw|um+|uh+|hmm+|ah+|"
    r"man|dude|gosh|cool|great|awesome|sure|totally|absolutely|definitely|right|true|nice|"
    r"good|congrats|congratulations|sorry|oops|anyway|anyhow|yay|ugh|alright|all right|"
    r"hey there|hi there|good morning|good evening|good afternoon|you know what|guess what)"
    r"\b[\s,!.:;-]*)+",
    re.I,
)
_VOCATIVE_END = re.compile(r",\s*[A-Z][a-z]+\s*(?=[.!]*$)")
_VOCATIVE_START = re.compile(r"^[A-Z][a-z]+,\s+(?=\S)")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|our|us)\b")
_FIRST_PERSON_CI = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'll|our|ours|us)\b", re.I
)
#: Informal statements without a subject: "Lost my job", "Been busy", "Just got back".
_SUBJECTLESS = re.compile(
    r"^(?P<lead>(?:just|finally|recently|also|still|actually|really|totally)\s+)*"
    r"(?P<verb>\w+)\b",
    re.I,
)
_PAST_STARTS = frozenset(
    """went got had made took saw came found gave felt left met ran began bought brought built
    sent spent lost won wrote kept held drove flew grew ate drank swam sang chose broke spoke
    became did paid led fed quit finished started tried visited joined moved signed booked
    adopted attended completed graduated landed launched opened painted picked played
    received returned signed spotted tried wrapped""".split()
)
_ING_STARTS = frozenset(
    """working trying thinking planning hoping looking learning taking doing getting
    heading going loving enjoying reading writing painting studying training saving
    preparing building starting""".split()
)
#: A finite verb after an opening gerund makes the gerund the subject ("Painting helps me
#: relax"), not an informal "I am painting".
_GERUND_SUBJECT = re.compile(
    r"^\w+ing\b[^,]*?\b(?:is|was|are|were|has|have|makes|made|helps|helped|looks|gives|"
    r"keeps|can|could|will|would|must|seems|feels|brings|lets|takes|means)\b",
    re.I,
)
#: Requests: "Please ...", or a sentence whose only first person is an object ("Call me").
_REQUEST = re.compile(
    r"^(?:please|kindly|pls|plz)\b|^(?!(?:i|we|my|our|me)\b)[a-z]+ (?:me|us)\b", re.I
)
_SUBJECT_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|we|we're|we've|my|our)\b", re.I)
#: "Don't forget to ..." / "Remember to ..." without "me": advice to the listener.
_ADVICE = re.compile(r"^(?:do not|don't|never) forget\b(?!.*\b(?:me|us)\b)|^remember to\b", re.I)
_ACRONYM = re.compile(r"\b[A-Z]{2}\b")
#: "The booking number is VZ-4471-K": a thing named by a reference, code or number.
_REFERENCE = re.compile(
    r"^(?:the|this|that|its|their) (?P<thing>(?:[a-z][\w\-]* ){0,3}(?:number|code|reference|"
    r"id|pin|address|confirmation|ticket|locator|password|username|account|order|"
    r"booking|reservation))(?: number)? (?:is|was|will be) (?P<value>.+)$",
    re.I,
)
#: Something that looks like a code: letters and digits mixed, or a long digit string.
_IDENTIFIER = re.compile(r"\b(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[\w\-]{4,}\b|\d[\d\- ]{4,}\d")
#: "Can you remind me to ...?": a task, though a question.
_REMIND_REQUEST = re.compile(r"^(?:can|could|would|will) you (?:please )?remind me\b", re.I)
#: Remarks about the conversation itself.
_META = re.compile(
    r"^I (?:have|had|got) (?:a|one|another) (?:quick |small )?question\b|^I(?:'m| am) not sure\b|"
    r"^I (?:do not|don't) (?:understand|get it|know)\b|^I(?:'m| am| was) wondering\b|"
    r"^I wonder\b|.*\b(?:brb|gtg|afk)\b",
    re.I,
)
#: Hypotheticals and conditionals state nothing that is the case.
_HYPOTHETICAL = re.compile(
    r"^(?:if|unless|suppose|supposing|imagine|what if|maybe|perhaps|i wish|i wonder|"
    r"wish|hopefully)\b",
    re.I,
)
_SECOND_PERSON = re.compile(r"^(?:you|your|you're|you've|you'll|you'd|u|ur)\b", re.I)
_PRONOUN_SUBJECT = re.compile(
    r"^(?:it|it's|that|that's|this|this's|these|those|there|there's|here|here's|they|they're|"
    r"he|he's|she|she's|what|how|why|where|when|who|which|let's|let|sounds|looks|seems|hope|"
    r"can't wait|cannot wait)\b",
    re.I,
)
_NAMED_SUBJECT = re.compile(r"^(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?) (?P<verb>[a-z]\w*(?:n't)?)\b")
#: Verbs a statement about a named person starts with ("Sam is vegetarian", "Tom moved").
_NAMED_VERBS = frozenset(
    """is was has had loves likes hates enjoys prefers works lives moved went got started
    joined studies plays needs wants uses can't cannot doesn't does will won't isn't wasn't
    eats drinks teaches owns runs speaks knows""".split()
)
#: Capitalised words that open sentences without naming anyone.
_NOT_NAMES = frozenset(
    """next last this that these those every each some all most many both no any the a an
    my our your his her their its family life people everyone everybody someone nobody
    monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december today tomorrow yesterday
    plus also and but so then there here what which when where why how who""".split()
)
_PREPOSITION_START = re.compile(r"^(?:for|to|about|on|with|from|at|in|by|of|as)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:love|loves|loved|like|likes|enjoy|enjoys|prefer|prefers|adore|adores|hate|hates|"
    r"dislike|dislikes|passionate|fan of|favou?rite|fave|into)\b",
    re.I,
)
_PAST_VERB = re.compile(
    r"^\S+(?: \S+){0,3}? (?:(?:also|just|finally|recently|already|actually|even|once) )*"
    r"(?P<verb>\w+ed|" + "|".join(sorted(_PAST_STARTS)) + r")\b",
    re.I,
)
#: Constraints that are kept whatever their length: health, diet, allergies.
_CONSTRAINT = re.compile(
    r"\b(?:allerg\w*|vegetarian|vegan|gluten|lactose|celiac|coeliac|diabet\w*|asthma\w*|"
    r"pregnan\w*|medication|medicine|motion sickness|seasick\w*|carsick\w*|epilep\w*|"
    r"intoleran\w*|kosher|halal|wheelchair|disabilit\w*|injur\w*|surgery|blood pressure|"
    r"peanuts?|shellfish|nuts?)\b",
    re.I,
)
#: The listener: a sentence about them ("I'm so proud of you") says little about the speaker.
_LISTENER = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd)\b", re.I)
#: Extra substance a sentence needs when it is about the listener or opens with "it"/"that".
LISTENER_PENALTY = 2


@dataclass(frozen=True, slots=True)
class Statement:
    """One extracted statement before it is stored (the offline form of a memory)."""

    content: str
    memory_type: str
    topic_key: str | None
    keywords: tuple[str, ...]
    queries: tuple[str, ...]
    source_id: str | None
    scope: str = "user"
    rule: str | None = None
    """The rule that typed it; None for a plain statement (those may be merged)."""
    substance: int = 0
    indirect: bool = False
    """About the listener or opened by a pronoun: needs more substance to be kept."""


def extract(
    turns: Sequence[ChatTurn],
    *,
    min_substance: int = MIN_SUBSTANCE,
    merge_words: int = MERGE_WORDS,
) -> list[Extracted]:
    """Memories stated in ``turns`` (see the module docstring), deduplicated, in order."""
    out: list[Extracted] = []
    seen: set[tuple[str, str]] = set()
    for turn in turns:
        found = [s for s in statements(turn) if keep(s, min_substance)]
        for st in _merge(found, merge_words):
            key = (st.memory_type, st.content.lower())
            if key in seen:
                continue
            seen.add(key)
            out.append(
                Extracted(
                    content=st.content,
                    memory_type=st.memory_type,
                    topic_key=st.topic_key,
                    keywords=st.keywords,
                    queries=st.queries,
                    source_ids=(st.source_id,) if st.source_id else (),
                    scope=st.scope,
                )
            )
    return out


def keep(st: Statement, min_substance: int = MIN_SUBSTANCE) -> bool:
    """Whether a candidate statement has enough substance to be a memory.

    Instructions and constraints always do; a statement a precise rule typed needs one
    content word; plain statements (and tasks, whose rule also matches "I will keep you
    posted") need ``min_substance``, more when they are about the listener.
    """
    if st.memory_type == "instruction" or _CONSTRAINT.search(st.content):
        return True
    if st.rule is not None and st.rule != "task":
        return st.substance >= 1
    return st.substance >= min_substance + (LISTENER_PENALTY if st.indirect else 0)


def speaker_of(turn: ChatTurn) -> tuple[str | None, str]:
    """(the name memories use for the turn's writer or None if it is no person, content)."""
    named = turn.speaker.strip() if turn.speaker and turn.speaker.strip() else None
    name, content = resolve_speaker(turn.role, turn.content, named)
    if name is None:
        return (USER if turn.role == "user" else None), content
    if turn.role not in ("user", "assistant"):
        return None, content
    return name, content


def statements(turn: ChatTurn) -> Iterator[Statement]:
    """Every candidate statement of one turn, before the substance filter and merging."""
    name, content = speaker_of(turn)
    if name is None:
        return
    person = subject_key(name)
    for raw in sentences(content):
        sentence = clean(raw)
        if not sentence or len(sentence) < 6 or _HYPOTHETICAL.match(sentence):
            continue
        if sentence.endswith("?") and not _REMIND_REQUEST.match(sentence):
            continue
        if not _SUBJECT_FIRST_PERSON.search(sentence):
            # no "I/we/my/our": an instruction, decision or request the rules know, if any
            directive = _directive(sentence, turn, name)
            if directive is not None:
                yield directive
                continue
        first_person = _as_first_person(sentence)
        if first_person is None:
            named = _named_statement(sentence, name) or _reference_statement(sentence, name)
            if named is not None:
                yield _plain(named, named, turn, person)
            continue
        if _META.match(first_person):
            continue
        yield from _typed(first_person, turn, name, person)


def clean(sentence: str) -> str:
    """A sentence without greetings, interjections and vocatives."""
    s = sentence.strip().replace("\u2019", "'").replace("\u2018", "'")
    s = _GREETING.sub("", s).strip()
    s = _VOCATIVE_START.sub("", s)
    s = _VOCATIVE_END.sub("", s).strip(" ,;:-")
    return s[:1].upper() + s[1:] if s else s


def _as_first_person(sentence: str) -> str | None:
    """The sentence as a first-person statement, or None when it is not one."""
    if _SECOND_PERSON.match(sentence) or _PREPOSITION_START.match(sentence):
        return None  # about the listener, or what is left of "Thanks for ..."
    if _REQUEST.match(sentence) and not _SUBJECT_FIRST_PERSON.search(sentence):
        return None  # "Please call me tomorrow": a request, not a statement
    informal = _subjectless(sentence)
    if informal is not None:
        return informal
    if _FIRST_PERSON_CI.search(sentence) and not _PRONOUN_SUBJECT.match(sentence):
        return sentence
    if _PRONOUN_SUBJECT.match(sentence):
        # "It was my first time at a concert": about the speaker only through "my"
        return sentence if _FIRST_PERSON.search(sentence) else None
    return None


def _subjectless(sentence: str) -> str | None:
    """An informal statement without its subject, with "I" put back ("Lost my job" ->
    "I lost my job", "Been busy" -> "I have been busy"), else None."""
    m = _SUBJECTLESS.match(sentence)
    if m is None:
        return None
    verb = m["verb"].lower()
    lowered = sentence[:1].lower() + sentence[1:]
    if verb in _PAST_STARTS:
        return "I " + lowered
    if verb == "been":
        return "I have " + lowered
    if verb in _ING_STARTS and not _GERUND_SUBJECT.match(sentence):
        return "I am " + lowered
    return None


def _reference_statement(sentence: str, name: str) -> str | None:
    """A reference the person gives without saying whose it is ("The booking number is
    VZ-4471-K", "The flight code is LH 1234"), stated as the person's: the code is what
    someone will ask for later. None for anything else."""
    m = _REFERENCE.match(sentence)
    if m is None or not _IDENTIFIER.search(m["value"]):
        return None
    owner = f"{name}'s" if name != USER else "The user's"
    return f"{owner} {m['thing']} is {m['value'].rstrip('!.')}."


def _directive(sentence: str, turn: ChatTurn, name: str) -> Statement | None:
    """An instruction, decision or request without the speaker as subject ("Always answer
    in English", "Let's go with the blue logo", "Please call me Sam"), typed by the rule
    table; None when no rule knows it."""
    frame = rules.parse_clause(sentence)
    if frame is None:
        return None
    if frame.memory_type == "task" and _ADVICE.match(sentence):
        return None  # "Don't forget to take breaks": advice to the listener, not a to-do
    return Statement(
        content=_sentence(_resolve_and_rewrite(frame.content, turn, name)),
        memory_type=frame.memory_type,
        topic_key=frame.topic_key,
        keywords=frame.keywords,
        queries=frame.queries,
        source_id=turn.id,
        scope=frame.scope,
        rule=frame.rule,
        substance=substance(sentence),
    )


def _named_statement(sentence: str, speaker: str) -> str | None:
    """A statement whose subject is a named person other than the speaker, as said."""
    m = _NAMED_SUBJECT.match(sentence)
    if m is None or any(w.lower() in _NOT_NAMES | LABEL_WORDS for w in m["name"].split()):
        return None
    verb = m["verb"].lower()
    if verb not in _NAMED_VERBS and not (verb.endswith("ed") or verb in _PAST_STARTS):
        return None
    return sentence.rstrip("!.") + "."


def _typed(sentence: str, turn: ChatTurn, name: str, person: str) -> Iterator[Statement]:
    """Rule-typed statements of the sentence's clauses, or one plain statement."""
    parts = clauses(sentence)
    frames = [(c, rules.parse_clause(c)) for c in parts]
    if not any(f is not None for _, f in frames):
        yield _plain(sentence, _resolve_and_rewrite(sentence, turn, name), turn, person)
        return
    for clause, frame in frames:
        if frame is None:
            yield _plain(clause, _resolve_and_rewrite(clause, turn, name), turn, person)
            continue
        content = _resolve_and_rewrite(frame.content, turn, name)
        yield Statement(
            content=_sentence(content),
            memory_type=frame.memory_type,
            topic_key=_person_key(frame.topic_key, person),
            keywords=frame.keywords,
            queries=frame.queries,
            source_id=turn.id,
            scope=frame.scope,
            rule=frame.rule,
            substance=substance(clause),
            indirect=bool(_LISTENER.search(clause)),
        )


def _resolve_and_rewrite(text: str, turn: ChatTurn, name: str) -> str:
    return third_person(resolve(text, turn.time), name)


def _plain(original: str, content: str, turn: ChatTurn, person: str) -> Statement:
    if _PREFERENCE.search(original):
        memory_type = "preference"
    elif TIME_EXPR.search(original) or has_relative_date(original) or _PAST_VERB.match(original):
        memory_type = "event"
    else:
        memory_type = "fact"
    words = content_words(content)
    return Statement(
        content=_sentence(content),
        memory_type=memory_type,
        topic_key=None,
        keywords=tuple(dict.fromkeys(w for w in words if len(w) > 2 and w != person))[:10],
        queries=(),
        source_id=turn.id,
        substance=substance(original),
        indirect=bool(_LISTENER.search(original) or _PRONOUN_SUBJECT.match(original)),
    )


def substance(text: str) -> int:
    """Content words that are not small talk (acronyms such as "PR" count too)."""
    acronyms = {w.lower() for w in _ACRONYM.findall(text)}
    return sum(
        1 for w in content_words(text) if w not in SMALL_TALK and (len(w) > 2 or w in acronyms)
    )


def _person_key(key: str | None, person: str) -> str | None:
    if key is None or not key.startswith("user."):
        return key
    return f"{person}.{key[len('user.') :]}"


def _sentence(text: str) -> str:
    t = re.sub(r"\s+", " ", text).strip().rstrip(",;:- ")
    t = re.sub(r"[!.]{2,}$", ".", t)
    t = cap(t)
    return t if t.endswith((".", "!", "?", '"')) else t + "."


def _mergeable(st: Statement) -> bool:
    """Plain facts, preferences and events without a topic key may join their neighbours;
    keyed attributes, instructions, decisions and tasks stay memories of their own."""
    return st.topic_key is None and st.memory_type in ("fact", "preference", "event", "note")


def _merge(found: list[Statement], merge_words: int) -> list[Statement]:
    """Consecutive plain statements of one turn joined while short enough."""
    out: list[Statement] = []
    for st in found:
        prev = out[-1] if out else None
        if (
            prev is not None
            and _mergeable(prev)
            and _mergeable(st)
            and len(prev.content.split()) + len(st.content.split()) <= merge_words
        ):
            kinds = {prev.memory_type, st.memory_type}
            memory_type = "event" if "event" in kinds else prev.memory_type
            out[-1] = replace(
                prev,
                content=f"{prev.content} {st.content}",
                memory_type=memory_type,
                keywords=tuple(dict.fromkeys((*prev.keywords, *st.keywords)))[:10],
                substance=prev.substance + st.substance,
                indirect=prev.indirect and st.indirect,
            )
        else:
            out.append(st)
    return out
