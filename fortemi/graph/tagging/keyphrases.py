"""Candidate keyphrases of a note and their KeyBERT-style ranking with MMR.

Candidates are runs of content words (1 to 3 of them) taken from the title and the text,
never crossing punctuation or a stop word: the RAKE heuristic for "noun-ish" phrases
(Rose et al. 2010), which needs no part-of-speech model. The stop list holds function
words, auxiliaries and the commonest verbs and adverbs, so what survives is mostly nouns,
adjectives and compounds ("vector database", "graph pruning"). A POS tagger would do a
little better, but every one that is worth it (spaCy, NLTK) downloads its model at run
time, which an offline install cannot do; this heuristic is deterministic and free.

Ranking follows KeyBERT (Grootendorst 2020): a phrase's score is the cosine between its
embedding and the note's, and Maximal Marginal Relevance (Carbonell & Goldstein 1998)
picks a diverse few: each next phrase maximises
``λ·cos(phrase, note) - (1 - λ)·max cos(phrase, already picked)``. Ties break on the
phrase's first position, so the same note and model always give the same phrases.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Candidate", "Ranked", "candidates", "mmr", "plain_text"]

STOP_WORDS = frozenset(
    """
    a about above across after again against all almost alone along already also although
    always am among an and another any anybody anyone anything anyway anywhere are aren't
    around as ask asked at away back be became because become becomes been before began
    begin behind being below besides best better between beyond both but by came can can't
    cannot could couldn't did didn't do does doesn't doing don't done down during each
    either else enough etc even ever every everyone everything everywhere example few find
    first for found from further gave get gets getting give given gives go goes going gone
    got had hadn't has hasn't have haven't having he her here hers herself him himself his
    how however i i'd i'll i'm i've ie if in inside instead into is isn't it it's its
    itself just keep kept know known knows last least less let lets like likely made make
    makes making many may maybe me might mine more most mostly much must my myself near
    need needed needs never new next no nobody none nor not nothing now of off often old
    on once one only onto or other others otherwise our ours ourselves out over own per
    perhaps put quite rather really said same saw say says see seem seemed seems seen
    several shall she should shouldn't show shown shows since so some somebody someone
    something sometimes somewhere soon still such sure take taken takes than that that's
    the their theirs them themselves then there there's these they they're thing things
    think this those though through thus to together too took toward towards try tried
    tries under until up upon us use used uses using usually very via want wanted wants
    was wasn't way ways we we're well went were weren't what what's whatever when where
    whether which while who whom whose why will with within without won't would wouldn't
    yes yet you you're your yours yourself yourselves
    """.split()
)

_LONGEST_WORD = 40
_ADVERB_SUFFIXES = ("ally", "ously", "ively", "ently", "antly", "fully", "ingly", "edly", "ately")

# A token: letters (any script), then letters, digits and the joiners of compounds and
# names ("pgvector", "C++", "gpt-4o", "node.js"), not ending on a joiner.
_TOKEN = re.compile(r"[^\W\d_](?:[\w+#]|[-.'](?=\w))*")
# What separates phrases besides stop words: sentence and clause punctuation, brackets.
_BREAK = re.compile(r"[.,;:!?()\[\]{}<>\"“”|/\\=*_~`]+\s|[,;:!?()\[\]{}<>\"“”|\\=*~`]|\n")
_FENCED = re.compile(r"```.*?```|~~~.*?~~~", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_WIKI = re.compile(r"!?\[\[([^\]|#\n]*)(?:#[^\]|\n]*)?(?:\|([^\]\n]*))?\]\]")
_HTML = re.compile(r"<[^>\n]{1,200}>")


def plain_text(text: str) -> str:
    """``text`` without code, URLs and markup, link texts kept: what a reader reads."""
    text = _FENCED.sub("\n", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _WIKI.sub(lambda m: f" {m.group(2) or m.group(1)} ", text)
    text = _LINK.sub(lambda m: f" {m.group(1)} ", text)
    text = _URL.sub(" ", text)
    return _HTML.sub(" ", text)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A phrase (lower-cased but for names), how often it occurs (title occurrences count
    twice), and where it first occurs (for deterministic ties)."""

    phrase: str
    count: int
    first: int


def _content(token: str) -> bool:
    lowered = token.lower()
    if lowered in STOP_WORDS:
        return False
    if len(token) > _LONGEST_WORD:  # identifiers, hashes, base64: not words
        return False
    if len(token) < 3 and not token.isupper():  # "ml" is noise, "AI" and "ML" are names
        return False
    # Adverbs by their suffix ("typically", "previously"); "-ly" alone would take
    # nouns with it ("family", "assembly", "anomaly").
    return not (len(lowered) > 5 and lowered.endswith(_ADVERB_SUFFIXES))


def _runs(segment: str) -> list[list[str]]:
    """Maximal runs of content tokens in one segment."""
    runs: list[list[str]] = [[]]
    for match in _TOKEN.finditer(segment):
        token = match.group(0)
        if _content(token):
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def candidates(
    title: str, content: str, *, max_words: int = 3, limit: int = 100
) -> list[Candidate]:
    """The note's candidate phrases (n-grams of 1..``max_words`` content words), most
    frequent first, then by first position; at most ``limit``.

    Phrases are compared case-insensitively. A word keeps its capitals only when the text
    writes it so inside a sentence (a name: "PostgreSQL", "Louvain"); capitals that only
    start a sentence or a title word are dropped. A phrase from the title counts double:
    titles name what a note is about.
    """
    text = plain_text(content)
    names = _names(text)
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    position = 0
    for weight, part in ((2, title), (1, text)):
        for segment in _BREAK.split(part):
            for run in _runs(segment):
                for size in range(1, max_words + 1):
                    for start in range(len(run) - size + 1):
                        key = " ".join(run[start : start + size]).lower()
                        if key not in counts:
                            counts[key] = 0
                            first[key] = position
                        counts[key] += weight
                        position += 1
    ordered = sorted(counts, key=lambda key: (-counts[key], first[key]))
    return [
        Candidate(" ".join(names.get(w, w) for w in key.split()), counts[key], first[key])
        for key in ordered[:limit]
    ]


_SENTENCE_END = frozenset(".!?:#>-*\n")


def _starts_sentence(text: str, at: int) -> bool:
    """Whether the word at ``at`` is the first of a sentence, line or list item."""
    i = at - 1
    while i >= 0 and text[i] in " \t\"'([":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _names(text: str) -> dict[str, str]:
    """Lower-cased word → its spelling, for words never written in lower case and written
    with capitals inside a sentence (not first in it) or all in capitals ("SNN")."""
    names: dict[str, str] = {}
    lower: set[str] = set()
    for match in _TOKEN.finditer(text):
        word = match.group(0)
        if word.islower():
            lower.add(word)
            continue
        if not _starts_sentence(text, match.start()) or (word.isupper() and len(word) > 1):
            names.setdefault(word.lower(), word)
    return {key: word for key, word in names.items() if key not in lower}


@dataclass(frozen=True, slots=True)
class Ranked:
    """A picked phrase and its cosine similarity to the note."""

    phrase: str
    similarity: float


def mmr(
    phrases: Sequence[str],
    phrase_vectors: NDArray[np.float32],
    note_vector: NDArray[np.float32],
    *,
    top: int,
    diversity: float = 0.3,
    floor: float = 0.0,
) -> list[Ranked]:
    """Up to ``top`` of ``phrases`` by Maximal Marginal Relevance against ``note_vector``.

    Vectors are unit length (a dot product is the cosine). ``diversity`` is 1 - λ: 0 ranks
    by relevance alone. Phrases less similar to the note than ``floor`` are never picked.
    Equal scores keep the order of ``phrases``.
    """
    if not phrases or top <= 0:
        return []
    relevance = phrase_vectors @ note_vector
    eligible = [i for i in range(len(phrases)) if relevance[i] >= floor]
    picked: list[int] = []
    redundancy = np.full(len(phrases), -np.inf, dtype=np.float32)
    while eligible and len(picked) < top:
        if picked:
            scores = [(1 - diversity) * relevance[i] - diversity * redundancy[i] for i in eligible]
        else:
            scores = [relevance[i] for i in eligible]
        best = eligible[int(np.argmax(scores))]  # argmax keeps the first of equal scores
        picked.append(best)
        eligible.remove(best)
        redundancy = np.maximum(redundancy, phrase_vectors @ phrase_vectors[best])
    return [Ranked(phrases[i], float(relevance[i])) for i in picked]
