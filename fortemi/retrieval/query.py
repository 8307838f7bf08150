"""Search query syntax, and what kind of query it is.

Syntax, as web search engines take it: words are optional and ranked (BM25 puts notes
with more, and rarer, query words first; a word said twice counts twice); ``"a phrase"``
is required, in that order; ``-word`` and ``-"a phrase"`` exclude; ``word*`` matches
words starting with ``word``; ``OR`` between words is accepted (optional words already
are alternatives). Unlike ``websearch_to_tsquery``, plain words are not all required:
ranked retrieval over optional terms is what BM25 is for, and a ten-word question rarely
has a note with every word in it.

A quotation is not an operator in a sentence: when the query has ``SENTENCE_WORDS`` or
more words outside quotes and uses no other operator (``-``, ``*``, ``OR``), its quoted
spans are *boosted* (their words count once more) instead of required, so a pasted
question that quotes a term is never emptied by its own quotation marks.

The work is bounded by distinct words (``MAX_QUERY_TERMS``, Lucene's default clause
limit), not by characters: a pasted paragraph is a query like any other, and the request
size limit bounds the text itself.

The query *type* steers fusion: quoted and short keyword queries lean on the lexical leg,
natural-language questions and long conceptual ones on the semantic leg.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from fortemi.platform.errors import BadUserInput

__all__ = ["MAX_QUERY_TERMS", "SENTENCE_WORDS", "ParsedQuery", "QueryType", "parse_query"]

MAX_QUERY_TERMS = 1024
SENTENCE_WORDS = 8
MAX_PREFIXES = 5
_MIN_PREFIX = 2
# A quoted phrase (optionally negated), or a run of non-space characters.
_TOKEN = re.compile(r'(-?)"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+", re.UNICODE)
_QUESTION = frozenset(
    "how what why when where which who whom whose does do is are can should could would "
    "explain describe".split()
)


class QueryType(StrEnum):
    QUOTED = "quoted"  # has a required phrase
    KEYWORD = "keyword"  # one to three words
    NATURAL = "natural"  # a question or a sentence
    CONCEPTUAL = "conceptual"  # long: a description of an idea rather than its words


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str  # optional words and phrases, for embedding
    phrases: tuple[str, ...]  # required, each matched with phraseto_tsquery
    excluded: tuple[str, ...]  # each excluded with phraseto_tsquery (a word is a phrase)
    prefixes: tuple[str, ...]  # lowercased word starts
    type: QueryType
    boosted: tuple[str, ...] = ()  # quoted spans of a sentence: ranked higher, not required

    @property
    def has_terms(self) -> bool:
        return bool(self.text.strip() or self.prefixes)

    @property
    def lexical_text(self) -> str:
        """What BM25 analyses: the text, with each boosted span's words once more."""
        return " ".join([self.text, *self.boosted])


def parse_query(query: str) -> ParsedQuery:
    """The parts of ``query``; BadUserInput when it is empty, only exclusions, or has more
    than ``MAX_QUERY_TERMS`` distinct words."""
    if not isinstance(query, str) or not query.strip():
        raise BadUserInput("Give a search query", field="query")
    distinct = len({word.lower() for word in _WORD.findall(query)})
    if distinct > MAX_QUERY_TERMS:
        raise BadUserInput(
            f"A search query has at most {MAX_QUERY_TERMS:,} distinct words; this one has "
            f"{distinct:,}. Keep the words that say what you look for",
            field="query",
        )
    words: list[str] = []
    quoted: list[str] = []
    excluded: list[str] = []
    prefixes: list[str] = []
    operators = False
    for match in _TOKEN.finditer(query):
        negated, phrase, bare = match.group(1), match.group(2), match.group(3)
        if phrase is not None:
            phrase = phrase.strip()
            if phrase:
                (excluded if negated else quoted).append(phrase)
            continue
        if bare == "OR":
            operators = True
            continue
        if bare.startswith("-") and len(bare) > 1:
            excluded.append(bare[1:])
        elif bare.endswith("*") and len(bare.rstrip("*")) >= _MIN_PREFIX:
            start = bare.rstrip("*").lower()
            operators = True
            if _WORD.fullmatch(start) and len(prefixes) < MAX_PREFIXES:
                prefixes.append(start)
            else:
                words.append(start)
        else:
            words.append(bare)
    text = " ".join([*words, *quoted])
    if not text.strip() and not prefixes:
        raise BadUserInput(
            "A search query needs at least one word or phrase to look for, not only exclusions",
            field="query",
        )
    sentence = len(words) >= SENTENCE_WORDS and not (operators or excluded)
    phrases, boosted = ((), tuple(quoted)) if sentence else (tuple(quoted), ())
    return ParsedQuery(
        text=text,
        phrases=phrases,
        excluded=tuple(excluded),
        prefixes=tuple(prefixes),
        type=_classify(words, phrases, prefixes),
        boosted=boosted,
    )


def _classify(words: list[str], phrases: tuple[str, ...], prefixes: list[str]) -> QueryType:
    if phrases:
        return QueryType.QUOTED
    count = len(words) + len(prefixes)
    first = words[0].lower().strip("?") if words else ""
    if count >= 10:
        return QueryType.CONCEPTUAL
    if count >= 4 or first in _QUESTION or any(w.endswith("?") for w in words):
        return QueryType.NATURAL
    return QueryType.KEYWORD
