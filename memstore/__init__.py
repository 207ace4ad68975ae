"""memstore: long-term memory for chat assistants and agents, in one SQLite file.

>>> from memstore import open_store
>>> store = open_store("memory.db")
>>> store.add_session("alice", "s1", "2024-03-02", [{"role": "user", "content": "I named my kitten Pixel."}])
>>> store.search("kitten's name", scope="alice")
"""

from .errors import (
    AnswerError,
    DatabaseError,
    DateFormatError,
    InputError,
    MemstoreError,
    ModelError,
    ModelMismatchError,
    NotFoundError,
    SchemaError,
    UsageError,
)
from .models import Hit, Hits, ImportReport, Item, ItemRef, LegRank, ScopeInfo, Session, Stats, Turn
from .retrieve import SearchOptions, Weights
from .store import Store, open_store

__all__ = [
    "AnswerError",
    "DatabaseError",
    "DateFormatError",
    "Hit",
    "Hits",
    "ImportReport",
    "InputError",
    "Item",
    "ItemRef",
    "LegRank",
    "MemstoreError",
    "ModelError",
    "ModelMismatchError",
    "NotFoundError",
    "SchemaError",
    "ScopeInfo",
    "SearchOptions",
    "Session",
    "Stats",
    "Store",
    "Turn",
    "UsageError",
    "Weights",
    "open_store",
]
