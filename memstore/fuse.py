"""Weighted reciprocal rank fusion, as a pure function with an explain trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .models import LegRank

#: The RRF constant C of Cormack et al. (2009).
RRF_K = 60


@dataclass(frozen=True)
class Fused:
    """One fused result: its score, and each leg's rank and contribution."""

    id: int
    score: float
    legs: dict[str, LegRank] = field(default_factory=dict)


def rrf(
    rankings: Mapping[str, Sequence[int]],
    weights: Mapping[str, float],
    *,
    k: int = RRF_K,
) -> list[Fused]:
    """Fuse ranked lists of ids by weighted RRF.

    ``score(d) = sum over legs of w_leg / (k + rank_leg(d))``, where ranks
    count from 1 (the best item of a leg has rank 1).  A leg whose weight is
    0, or that is missing from ``weights``, is ignored.  Each result keeps
    every contributing leg's rank and contribution; the contributions sum to
    the score.  Ties are broken by the best rank in any leg, then by id, so
    the order is deterministic.
    """
    acc: dict[int, dict[str, LegRank]] = {}
    for leg, ids in rankings.items():
        w = weights.get(leg, 0.0)
        if w <= 0:
            continue
        seen: set[int] = set()
        for rank, item_id in enumerate(ids, start=1):
            if item_id in seen:  # a leg names an item once; keep its best rank
                continue
            seen.add(item_id)
            acc.setdefault(item_id, {})[leg] = LegRank(rank=rank, contribution=w / (k + rank))
    fused = [Fused(i, sum(lr.contribution for lr in legs.values()), legs) for i, legs in acc.items()]
    fused.sort(key=lambda f: (-f.score, min(lr.rank for lr in f.legs.values()), f.id))
    return fused
