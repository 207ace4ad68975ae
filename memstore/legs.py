"""The retrieval legs: each returns item ids, best first, already filtered.

Filtering by scope, role and date happens inside SQL (FTS5, the tag tables)
or inside sqlite-vec (partition key and metadata columns), never by fetching
a scope into Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from .query import QueryTerms, fts_match
from .vectors import at_key

#: sqlite-vec refuses a KNN ``k`` above this.
MAX_KNN = 4096


@dataclass(frozen=True)
class Filters:
    """What every leg keeps: one scope, some roles, a date window.

    ``as_of`` is an inclusive upper bound and ``after`` an exclusive lower
    bound, both ISO timestamps (see :func:`memstore.dates.as_of_bound`).
    """

    scope_id: int
    roles: tuple[str, ...] | None = None
    as_of: str | None = None
    after: str | None = None

    def sql(self, alias: str = "i") -> tuple[str, list[Any]]:
        """SQL conditions on the items table (aliased ``alias``), with parameters."""
        conds, params = [f"{alias}.scope_id = ?"], [self.scope_id]
        if self.roles:
            conds.append(f"{alias}.role IN ({','.join('?' * len(self.roles))})")
            params += self.roles
        if self.as_of is not None:
            conds.append(f"{alias}.at <= ?")
            params.append(self.as_of)
        if self.after is not None:
            conds.append(f"{alias}.at > ?")
            params.append(self.after)
        return " AND ".join(conds), params


def bm25(conn: apsw.Connection, terms: QueryTerms, f: Filters, limit: int, *, conjunctive: bool = False) -> list[int]:
    """Items ranked by FTS5 ``bm25()``: terms OR-ed, or AND-ed when ``conjunctive``."""
    if not terms.words:
        return []
    where, params = f.sql("i")
    # Weight 0 for the scope_id column: it only restricts, it must not score.
    # CROSS JOIN keeps FTS5 as the outer loop; otherwise the planner walks the
    # scope's items and evaluates MATCH once per item (a thousand times slower).
    rows = conn.execute(
        f"""SELECT i.id FROM items_fts CROSS JOIN items i ON i.id = items_fts.rowid
            WHERE items_fts MATCH ? AND {where}
            ORDER BY bm25(items_fts, 1.0, 0.0), i.id LIMIT ?""",
        [fts_match(terms.words, f.scope_id, conjunctive=conjunctive), *params, limit],
    )
    return [r[0] for r in rows]


def vector(conn: apsw.Connection, query_vector: bytes, f: Filters, limit: int) -> list[int]:
    """Items ranked by cosine distance to the query vector (a vec0 KNN in the scope's partition)."""
    conds, params = ["embedding MATCH ?", "k = ?", "scope_id = ?"], [query_vector, min(limit, MAX_KNN), f.scope_id]
    if f.roles:
        conds.append(f"role IN ({','.join('?' * len(f.roles))})")
        params += f.roles
    if f.as_of is not None:
        conds.append("at <= ?")
        params.append(at_key(f.as_of))
    if f.after is not None:
        conds.append("at > ?")
        params.append(at_key(f.after))
    # The join drops vectors whose item was deleted outside memstore (e.g. from
    # the shell).  MATERIALIZED keeps the KNN a query of its own: vec0 accepts
    # no ORDER BY but distance, so it must not be flattened into the join.
    rows = conn.execute(
        f"""WITH knn AS MATERIALIZED (SELECT item_id, distance FROM items_vec WHERE {' AND '.join(conds)})
            SELECT knn.item_id FROM knn JOIN items i ON i.id = knn.item_id ORDER BY knn.distance, knn.item_id""",
        params,
    )
    return [r[0] for r in rows]


def tags(conn: apsw.Connection, terms: QueryTerms, f: Filters, limit: int) -> list[int]:
    """Items whose tags match query terms or whose author matches ``by:<author>``.

    Ranked by how many terms matched, then newest first.  Both lookups go
    through an index (tag, and scope + lower(author)), so a scope without
    tags costs nothing.
    """
    if not terms.tags and not terms.authors:
        return []
    where, params = f.sql("i")
    tag_ph = ",".join("?" * len(terms.tags)) or "NULL"
    author_ph = ",".join("?" * len(terms.authors)) or "NULL"
    rows = conn.execute(
        f"""WITH matched(id, n) AS (
                SELECT item_id, count(*) FROM item_tags WHERE tag IN ({tag_ph}) GROUP BY item_id
                UNION ALL
                SELECT id, 1 FROM items WHERE scope_id = ? AND author IS NOT NULL AND lower(author) IN ({author_ph})
            )
            SELECT i.id, sum(m.n) AS n FROM matched m JOIN items i ON i.id = m.id
            WHERE {where}
            GROUP BY i.id ORDER BY n DESC, i.at DESC, i.id LIMIT ?""",
        [*terms.tags, f.scope_id, *terms.authors, *params, limit],
    )
    return [r[0] for r in rows]


def latest(conn: apsw.Connection, f: Filters, limit: int, *, among: list[int] | None = None) -> list[int]:
    """The latest-dated items, newest first: of ``among`` when given, else of the whole scope."""
    where, params = f.sql("i")
    if among is not None:
        if not among:
            return []
        where += f" AND i.id IN ({','.join('?' * len(among))})"
        params += among
    rows = conn.execute(
        f"""SELECT i.id FROM items i JOIN sessions se ON se.id = i.session_id
            WHERE {where} ORDER BY i.at DESC, se.started_at DESC, i.seq DESC, i.id DESC LIMIT ?""",
        [*params, limit],
    )
    return [r[0] for r in rows]
