"""The record view (the Mem++ output): the top-k records, dated and attributed.

Records are chosen by fused rank (with the latest-dated slots), cut to a
character budget, then shown oldest first, so that an older version of a
decision and the newer one that replaced it sit side by side and the reader
decides which holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .models import Hit
from .retrieve import SearchOptions

if TYPE_CHECKING:
    from .store import Store

#: The Mem++ cut: 40,000 characters of records in total.
MAX_CHARS = 40_000
CUT_MARK = " [… cut]"


@dataclass(frozen=True)
class RecordView:
    """The text for the reader, and the hits it holds (in the order shown)."""

    question: str
    scope: str
    as_of: str | None
    text: str
    hits: tuple[Hit, ...]
    cut: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "scope": self.scope,
            "as_of": self.as_of,
            "cut": self.cut,
            "records": [h.to_json() for h in self.hits],
            "text": self.text,
        }


def _header(hit: Hit) -> str:
    it = hit.item
    parts = [it.at.replace("T", " ")[:16], it.role]
    if it.author:
        parts.append(f"by {it.author}")
    parts.append(f"session {it.session}, turn {it.turn}")
    if it.tags:
        parts.append("tags " + ", ".join(it.tags))
    return "[" + " · ".join(parts) + "]"


def build_records(
    store: Store,
    question: str,
    *,
    scope: str,
    as_of: str | None = None,
    k: int = 50,
    max_chars: int = MAX_CHARS,
    options: SearchOptions | None = None,
) -> RecordView:
    """The top-``k`` records for ``question``, within ``max_chars`` characters, oldest first."""
    opts = options or SearchOptions(k=k, as_of=as_of)
    hits = store.search(question, scope=scope, options=opts)
    kept: list[tuple[Hit, str]] = []
    used = 0
    cut = False
    for hit in hits:  # rank order decides what fits
        block = f"{_header(hit)}\n{hit.item.content}"
        room = max_chars - used
        if len(block) > room:
            if room > len(_header(hit)) + len(CUT_MARK) + 40:
                kept.append((hit, block[: room - len(CUT_MARK)] + CUT_MARK))
            cut = True
            break
        kept.append((hit, block))
        used += len(block) + 2
    kept.sort(key=lambda hb: (hb[0].item.at, hb[0].item.session, hb[0].item.turn))
    return RecordView(
        question=question,
        scope=scope,
        as_of=as_of,
        text="\n\n".join(b for _, b in kept),
        hits=tuple(h for h, _ in kept),
        cut=cut,
    )
