"""Fused retrieval: run the legs, fuse them, keep slots for the latest-dated matches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import feedback as fb
from . import legs, vectors
from .dates import after_bound, as_of_bound
from .errors import ModelError, UsageError
from .fuse import Fused, rrf
from .legs import Filters
from .models import ROLES, Hit, Hits
from .query import QueryTerms, analyse
from .rules import asks_for_advice

if TYPE_CHECKING:
    from .store import Store

MODES = ("bm25", "vector", "fused")


@dataclass(frozen=True)
class Weights:
    """RRF weights of the lexical (BM25), tag and vector legs."""

    lex: float = 1.0
    tag: float = 1.0
    vec: float = 1.0

    @classmethod
    def parse(cls, text: str) -> Weights:
        """Parse ``"lex,tag,vec"``, e.g. ``"1,1,4"``."""
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise UsageError(f"weights {text!r} must be three numbers, lex,tag,vec (e.g. 1,1,4)") from None
        if len(values) != 3:
            raise UsageError(f"weights {text!r} must be three numbers, lex,tag,vec (e.g. 1,1,4)")
        return cls(*values)

    def check(self) -> None:
        values = (self.lex, self.tag, self.vec)
        if any(v < 0 or v != v for v in values):
            raise UsageError("weights must not be negative")
        if not any(values):
            raise UsageError("at least one weight must be above zero")

    def as_dict(self) -> dict[str, float]:
        return {"bm25": self.lex, "tags": self.tag, "vector": self.vec}


#: Chosen by a sweep on LongMemEval-S with the MiniLM test model (README,
#: Results; one pass): vector weights 0.5-4 and C of 50-1000 moved session recall@5 by
#: less than 0.01; (1, 1, 1) with C = 50 was within 0.005 of the best at both
#: @5 and @10.  The seeds' (1, 1, 4), C = 50, conjunctive scored 0.853 / 0.934.
#: A stronger embedding model may want a larger vector weight: sweep again.
DEFAULT_WEIGHTS = Weights(1.0, 1.0, 1.0)
#: With feedback, a deeper pool lets the second pass reach what the first
#: missed: C = 100 scored 0.934 / 0.972 at @5 / @10 against 0.936 / 0.964 for
#: C = 50 (better at @10 on both halves of the questions), at the same p50.
DEFAULT_CANDIDATES = 100


@dataclass(frozen=True)
class SearchOptions:
    """How to search.  Dates are ISO-8601; a date without a time means that whole day."""

    k: int = 10
    mode: str = "fused"
    weights: Weights = DEFAULT_WEIGHTS
    candidates: int = DEFAULT_CANDIDATES
    conjunctive: bool = False
    latest_slots: int = 3
    roles: tuple[str, ...] | None = None
    as_of: str | None = None
    after: str | None = None
    #: Lean on the vector leg for requests for advice (see :func:`leg_weights`).
    adaptive: bool = True
    #: In fused mode, a second pass of the legs with pseudo-relevance feedback
    #: (see :mod:`memstore.feedback`).
    feedback: bool = True

    def check(self) -> None:
        if self.k <= 0:
            raise UsageError(f"k must be at least 1 (got {self.k})")
        if self.candidates <= 0:
            raise UsageError(f"candidates must be at least 1 (got {self.candidates})")
        if self.latest_slots < 0:
            raise UsageError(f"latest slots must be 0 or more (got {self.latest_slots})")
        if self.mode not in MODES:
            raise UsageError(f"mode {self.mode!r} is not one of: {', '.join(MODES)}")
        for role in self.roles or ():
            if role not in ROLES:
                raise UsageError(f"role {role!r} is not one of: {', '.join(ROLES)}")
        self.weights.check()


@dataclass
class Ranking:
    """The fused list and each leg's own list, for one query."""

    terms: QueryTerms
    filters: Filters
    mode: str
    fused: list[Fused]
    legs: dict[str, list[int]] = field(default_factory=dict)
    #: What the second pass used, when it ran.
    feedback: fb.Feedback | None = None


def filters_for(store: Store, scope: str, options: SearchOptions) -> Filters:
    return Filters(
        scope_id=store.scope_id(scope),
        roles=options.roles,
        as_of=as_of_bound(options.as_of) if options.as_of else None,
        after=after_bound(options.after) if options.after else None,
    )


def effective_mode(store: Store, mode: str) -> str:
    """The mode that can run: ``fused`` falls back to ``bm25`` (with a notice) when there are no vectors."""
    if mode == "bm25":
        return mode
    if not vectors.count_vectors(store.conn):
        if mode == "vector":
            raise ModelError("the store has no embeddings; run `memstore embed` first")
        store.notice("the store has no embeddings, so retrieval runs BM25 only (run `memstore embed`)")
        return "bm25"
    if store.embedder(required=(mode == "vector")) is None:
        store.notice("no embedding model found, so retrieval runs BM25 only (run `memstore model pull`)")
        return "bm25"
    return mode


#: With adaptive weights, a request for advice or recommendations leans on the
#: vector leg: such questions rarely share words with the preferences they
#: depend on ("suggest a show for tonight" / "I love slow-burn sci-fi").
ADVICE_VECTOR_FACTOR = 4.0


def leg_weights(query: str, weights: Weights, adaptive: bool = True) -> dict[str, float]:
    """The RRF weight of each leg for this query."""
    w = weights.as_dict()
    if adaptive and asks_for_advice(query):
        w["vector"] *= ADVICE_VECTOR_FACTOR
    return w


def rank(
    store: Store,
    query: str,
    filters: Filters,
    *,
    mode: str = "fused",
    weights: Weights = DEFAULT_WEIGHTS,
    candidates: int = DEFAULT_CANDIDATES,
    conjunctive: bool = False,
    query_vector: bytes | None = None,
    adaptive: bool = True,
    feedback: bool = True,
) -> Ranking:
    """Run the legs the mode asks for and fuse them (no latest-dated slots).

    In fused mode with ``feedback``, when the first pass matched at least
    :data:`~memstore.feedback.FEEDBACK_MIN_POOL` items, its top
    :data:`~memstore.feedback.FEEDBACK_DOCS` hits are taken as relevant and
    the legs run again: BM25 with their most shared words added (not when
    ``conjunctive``), the vector leg with the query moved towards their
    vectors.  The second pass's lists replace the first's, so the explain
    trace shows the ranks that counted.
    """
    terms = analyse(query)
    mode = effective_mode(store, mode) if query_vector is None else mode
    conn = store.conn
    w = leg_weights(query, weights, adaptive)
    lists: dict[str, list[int]] = {}
    if mode in ("bm25", "fused"):
        lists["bm25"] = legs.bm25(conn, terms, filters, candidates, conjunctive=conjunctive)
        if w["tags"] > 0:
            lists["tags"] = legs.tags(conn, terms, filters, candidates)
    if mode in ("vector", "fused"):
        if query_vector is None:
            embedder = store.embedder(required=True)
            assert embedder is not None
            query_vector = vectors.query_vector(conn, embedder, query)
        lists["vector"] = legs.vector(conn, query_vector, filters, candidates)
    if mode == "bm25":
        w = {"bm25": 1.0, "tags": w["tags"]}
    elif mode == "vector":
        w = {"vector": 1.0}
    fused = rrf(lists, w)
    used: fb.Feedback | None = None
    if feedback and mode == "fused" and len(fused) >= fb.FEEDBACK_MIN_POOL:
        top = [f.id for f in fused[: fb.FEEDBACK_DOCS]]
        extra: tuple[str, ...] = ()
        if not conjunctive:
            found = store.items_by_id(top)
            # Best first: ties between words go to the best hit's.
            extra = fb.expansion_terms([found[i].content for i in top if i in found], terms)
        if extra:
            lists["bm25"] = legs.bm25(conn, fb.expanded_terms(terms, extra), filters, candidates)
        assert query_vector is not None
        moved = fb.feedback_vector(conn, query_vector, top)
        if moved is not None:
            lists["vector"] = legs.vector(conn, moved, filters, candidates)
        if extra or moved is not None:
            fused = rrf(lists, w)
            used = fb.Feedback(items=tuple(top), terms=tuple(extra))
    return Ranking(terms=terms, filters=filters, mode=mode, fused=fused, legs=lists, feedback=used)


def search(
    store: Store, query: str, *, scope: str, options: SearchOptions, query_vector: bytes | None = None
) -> Hits:
    """Search one scope; see :class:`SearchOptions`.

    Of ``k`` results, the last ``latest_slots`` go to the latest-dated items
    that matched any leg and are not already among the first ``k -
    latest_slots`` (so a revised decision reaches the reader even when an
    older version ranks higher).  When too few matched, the latest items of
    the scope fill them.  At least one slot always goes by rank.

    ``query_vector`` (float32 bytes) skips embedding the query, e.g. when the
    caller already has it.
    """
    options.check()
    ranking = rank(
        store,
        query,
        filters_for(store, scope, options),
        mode=options.mode,
        weights=options.weights,
        candidates=options.candidates,
        conjunctive=options.conjunctive,
        query_vector=query_vector,
        adaptive=options.adaptive,
        feedback=options.feedback,
    )
    slots = min(options.latest_slots, options.k - 1)
    top = ranking.fused[: options.k - slots]
    chosen = {f.id for f in top}
    latest_ids: list[int] = []
    if slots:
        matched = [f.id for f in ranking.fused if f.id not in chosen]
        latest_ids = legs.latest(store.conn, ranking.filters, slots, among=matched)
        if len(latest_ids) < slots:
            extra = legs.latest(store.conn, ranking.filters, slots + len(chosen) + len(latest_ids))
            taken = chosen | set(latest_ids)
            latest_ids += [i for i in extra if i not in taken][: slots - len(latest_ids)]
    by_id = {f.id: f for f in ranking.fused}
    used = ranking.feedback
    feedback_ids = list(used.items) if used else []
    items = store.items_by_id([f.id for f in top] + latest_ids + feedback_ids)
    hits = Hits(
        [Hit(items[f.id], f.score, f.legs) for f in top if f.id in items],
        feedback_from=[items[i].ref for i in feedback_ids if i in items],
        feedback_words=list(used.terms) if used else [],
    )
    for item_id in latest_ids:
        f = by_id.get(item_id)
        hits.append(Hit(items[item_id], f.score if f else 0.0, f.legs if f else {}, slot="latest"))
    return hits
