"""The value types memstore returns.  All are frozen dataclasses.

Items are named in JSON output by :class:`ItemRef`, ``{"session": key,
"turn": index}``: the session's key in its scope and the turn's 0-based index
in that session.  That form is a contract other tools rely on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "document"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "document")


@dataclass(frozen=True)
class ItemRef:
    """Names one item: its session's key and its 0-based turn index."""

    session: str
    turn: int

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "turn": self.turn}


@dataclass(frozen=True)
class Turn:
    """One turn (or document) to store.  ``at`` defaults to the session's date."""

    role: str
    content: str
    author: str | None = None
    at: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    """A stored turn or document."""

    id: int
    scope: str
    session: str
    turn: int
    role: str
    author: str | None
    at: str
    content: str
    tags: tuple[str, ...] = ()

    @property
    def ref(self) -> ItemRef:
        return ItemRef(self.session, self.turn)


@dataclass(frozen=True)
class Session:
    """A stored session, with its items when they were asked for."""

    scope: str
    key: str
    started_at: str
    title: str | None = None
    meta: dict[str, Any] | None = None
    items: tuple[Item, ...] = ()
    n_items: int = 0


@dataclass(frozen=True)
class ScopeInfo:
    """A scope with a summary of what it holds."""

    name: str
    sessions: int
    items: int
    first: str | None
    last: str | None


@dataclass(frozen=True)
class LegRank:
    """Where one retrieval leg ranked a hit, and what that added to its score."""

    rank: int
    contribution: float


@dataclass(frozen=True)
class Hit:
    """One search result.

    ``legs`` maps each leg that returned the item to its rank (from 1) and its
    weighted RRF contribution; the contributions sum to ``score``.  ``slot``
    is ``"rank"`` for hits placed by fused score and ``"latest"`` for the
    slots kept for the latest-dated matches.
    """

    item: Item
    score: float
    legs: dict[str, LegRank] = field(default_factory=dict)
    slot: Literal["rank", "latest"] = "rank"

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.item.ref.to_json(),
            "role": self.item.role,
            "author": self.item.author,
            "at": self.item.at,
            "score": round(self.score, 6),
            "slot": self.slot,
            "content": self.item.content,
        }
        if self.item.tags:
            out["tags"] = list(self.item.tags)
        if explain:
            out["legs"] = {name: asdict(lr) for name, lr in self.legs.items()}
        return out


class Hits(list[Hit]):
    """Search results, best first: a list of :class:`Hit` that also tells
    what the feedback pass used (see :mod:`memstore.feedback`), for the
    explain trace.  Both are empty when no second pass ran."""

    #: The first-pass hits taken as relevant.
    feedback_from: list[ItemRef]
    #: The words the second pass added to the BM25 query.
    feedback_words: list[str]

    def __init__(self, hits: Iterable[Hit] = (), *, feedback_from: Iterable[ItemRef] = (),
                 feedback_words: Iterable[str] = ()) -> None:
        super().__init__(hits)
        self.feedback_from = list(feedback_from)
        self.feedback_words = list(feedback_words)

    def feedback_json(self) -> dict[str, Any] | None:
        if not self.feedback_from:
            return None
        return {"from": [r.to_json() for r in self.feedback_from], "words": self.feedback_words}


@dataclass(frozen=True)
class ImportReport:
    """What one import did."""

    path: str
    format: str
    scopes: int
    sessions_added: int
    sessions_replaced: int
    sessions_unchanged: int
    items: int
    skipped_empty: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Stats:
    """Counts and sizes for a whole store."""

    path: str
    file_bytes: int
    scopes: int
    sessions: int
    items: int
    items_by_role: dict[str, int]
    text_bytes: int
    embedded_items: int
    embedding_model: str | None
    schema_version: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
