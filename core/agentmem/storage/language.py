"""Which analysis a text gets in the keyword index: English, another European language, or
Chinese / Japanese / Korean.

English text is stemmed and its function words dropped (``keyword_index``'s English
analyzer): "running" finds "runs". The same on German, Spanish or French would conflate
unrelated words and drop real ones ("was", "an", "no"), so text in those languages is only
lowercased and folded, never stemmed. Chinese and Japanese write no spaces, so a tokenizer
splitting on them sees a whole sentence as one word (too long: dropped); such text is cut into
overlapping character pairs (:func:`cjk_bigrams`: 東京の天気 -> 東京 京の の天 天気), which
a query cut the same way matches without a dictionary.

:func:`language` decides per text, by the share of CJK letters and by counting common function
words of English, German, Spanish and French (and letters English does not write: ä, ñ, ç);
anything it cannot tell is English, so English text is analysed exactly as before.

Example:
    >>> language("Meine Schwester wohnt in Lissabon und arbeitet als Lehrerin")
    'de'
    >>> language("My sister lives in Lisbon"), language("東京の天気は晴れです")
    ('en', 'cjk')
"""

from __future__ import annotations

import re

#: Common function words of each language that are rarely English words.
_MARKERS: dict[str, frozenset[str]] = {
    "en": frozenset(
        """the and is are of to with my your you what where when this that have has for on
        it was were be been will would can do does did not at from how which who i me we
        they he she his her our their an a""".split()
    ),
    "de": frozenset(
        """der das und ist nicht ich auf für ein eine einen einem einer zu dem des
        sich auch wir meine mein meiner meinen wo wie bei nach im oder aber sehr noch
        schon habe sind wird werden kann nur dieser diese dieses wann warum welche
        welcher uns euch ihr ihre gibt keine kein immer zum zur muss jeden jede seit vom
        beim heute""".split()
    ),
    "es": frozenset(
        """el los las y que una es por con para mis su sus lo al del pero muy tengo está
        están como dónde cuándo qué cómo también mi hermana hermano se le les nos
        hay ya este esta estos estas las""".split()
    ),
    "fr": frozenset(
        """le les et est une des du je il elle pas pour dans sur avec mon ma mes qui au aux
        sont ai très où quand aussi ce cette ces nous vous ils elles leur leurs chez mais
        ou être avoir fait quel quelle""".split()
    ),
}
#: Letters English does not write (loanwords aside: one of them alone decides nothing).
_LETTERS: dict[str, frozenset[str]] = {
    "de": frozenset("äöüß"),
    "es": frozenset("ñ¿¡áíóú"),
    "fr": frozenset("àâçèêëîïôœùû"),
}
#: A word: letters, not glued to digits ("13210Mi" holds no word "mi").
_WORD = re.compile(r"(?<![\w])[^\W\d_]+(?![\w])")
#: ... and at least this share of a text's words must be its markers (a log or a JSON
#: document naming "Mon" and "pas" once is not French).
_MIN_SHARE = 0.1
#: A language needs at least this many of its markers, and more than English has.
_MIN_MARKERS = 2
#: Share of letters in CJK scripts from which a text is cut into character pairs.
_CJK_SHARE = 0.2


def is_cjk(ch: str) -> bool:
    """True for a Han, Hiragana, Katakana or Hangul character."""
    o = ord(ch)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0x3040 <= o <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= o <= 0x31FF  # katakana phonetic extensions
        or 0xAC00 <= o <= 0xD7AF  # hangul syllables
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0xFF66 <= o <= 0xFF9F  # half-width katakana
    )


def language(text: str) -> str:
    """``"cjk"``, ``"de"``, ``"es"``, ``"fr"``, or ``"en"`` (also for whatever it cannot tell)."""
    # every row is written and every query asked through here: ASCII text (most of it) has
    # no CJK letter and none of _LETTERS, so only its words are looked at
    plain = text.isascii()
    if not plain:
        letters = [ch for ch in text if ch.isalpha()]
        if not letters:
            return "en"
        if sum(1 for ch in letters if is_cjk(ch)) >= _CJK_SHARE * len(letters):
            return "cjk"
    lowered = text.lower()
    words = _WORD.findall(lowered)
    counts = dict.fromkeys(_MARKERS, 0)
    for word in words:
        for lang, markers in _MARKERS.items():
            if word in markers:
                counts[lang] += 1
    if not plain:
        for lang, chars in _LETTERS.items():
            counts[lang] += 1 if any(ch in chars for ch in lowered) else 0
    english = counts.pop("en")
    best = max(counts, key=lambda lang: counts[lang])
    if counts[best] >= max(_MIN_MARKERS, _MIN_SHARE * len(words)) and counts[best] > english:
        return best
    return "en"


def cjk_bigrams(text: str) -> str:
    """``text`` with every run of CJK characters replaced by its overlapping character pairs
    (a single character stays), separated by spaces; other characters are kept."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(f" {run[0]} ")
        elif run:
            out.append(" " + " ".join(run[i] + run[i + 1] for i in range(len(run) - 1)) + " ")
        run.clear()

    for ch in text:
        if is_cjk(ch):
            run.append(ch)
        else:
            flush()
            out.append(ch)
    flush()
    return "".join(out)


__all__ = ["cjk_bigrams", "is_cjk", "language"]
