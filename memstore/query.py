"""Turning a person's query text into search terms.

Query text is never handed to FTS5 raw: it is split into words, and each
word is quoted, so quotes, ``NEAR``, ``*``, ``-``, ``:`` and parentheses are
searched as plain words and can never raise a syntax error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UsageError

#: The most terms a query contributes; a pasted 100 KB text would otherwise
#: build an FTS5 expression too large to evaluate quickly.
MAX_TERMS = 64

# Unicode letters and digits, as FTS5's unicode61 tokenizer sees words.
_WORD = re.compile(r"[^\W_]+")
_AUTHOR = re.compile(r"""\bby:(?:"([^"]+)"|(\S+))""", re.IGNORECASE)
_TAG = re.compile(r"""(?:\btag:|#)([^\s,;"'()]+)""", re.IGNORECASE)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't
    my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't
    we we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why
    why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    s t d ll m re ve just also would could
    """.split()
)


@dataclass(frozen=True)
class QueryTerms:
    """The parts of a query each retrieval leg uses."""

    text: str
    #: Content words (stopwords dropped), lower-cased, de-duplicated, in order.
    #: When a query has only stopwords, they are kept: better than nothing.
    words: tuple[str, ...]
    #: Terms the tag leg matches against item tags.
    tags: tuple[str, ...]
    #: Names from ``by:<author>`` that the tag leg matches against authors.
    authors: tuple[str, ...]


def analyse(query: str) -> QueryTerms:
    """Split a query into terms; a :class:`UsageError` when it has no words at all."""
    if not isinstance(query, str) or not query.strip():
        raise UsageError("the query is empty")
    authors = tuple(dict.fromkeys((a or b).strip().lower() for a, b in _AUTHOR.findall(query)))
    explicit_tags = [t.lower() for t in _TAG.findall(query)]
    all_words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    if not all_words and not authors and not explicit_tags:
        raise UsageError("the query has no words to search for (only punctuation)")
    words = [w for w in all_words if w not in STOPWORDS] or all_words
    words = words[:MAX_TERMS]
    tags = tuple(dict.fromkeys([*explicit_tags, *words]))[:MAX_TERMS]
    return QueryTerms(text=query, words=tuple(words), tags=tags, authors=authors)


def fts_match(words: tuple[str, ...], scope_id: int, *, conjunctive: bool = False) -> str:
    """An FTS5 MATCH expression for ``words`` in one scope.

    Every word is quoted (words hold only letters and digits, so no quote can
    appear inside).  The scope is a token of the indexed ``scope_id`` column,
    which lets FTS5 intersect posting lists instead of ranking every scope.
    """
    joiner = " AND " if conjunctive else " OR "
    body = joiner.join(f'"{w}"' for w in words)
    return f'scope_id : "{int(scope_id)}" AND content : ({body})'
