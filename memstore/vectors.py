"""Item vectors: the embedding cache, the sqlite-vec table, and the embed job.

Vectors live in two places.  ``embeddings`` is a cache keyed by the hash of
the exact model input and the model fingerprint, so identical text is
embedded once across sessions, scopes and re-imports.  ``items_vec`` is a
vec0 table with one row per embedded item, partitioned by scope and carrying
role and date as metadata, so a KNN query filters inside sqlite-vec.

The store's ``meta`` records which model made its vectors
(``embed.fingerprint``); querying or embedding with another model is refused
until the store is re-embedded with ``--force``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apsw

from . import db
from .errors import ModelMismatchError

if TYPE_CHECKING:
    from .embed import Embedder

#: Vectors per vec0 chunk.  sqlite-vec allocates whole chunks per partition
#: (scope); its default of 1024 made a 500-item scope cost 1.5 MB at 384 dims.
CHUNK_SIZE = 64


@dataclass(frozen=True)
class EmbedProgress:
    """A snapshot of a running embed job."""

    done: int
    total: int
    tokens: int
    computed: int
    cached: int
    elapsed: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(frozen=True)
class EmbedReport:
    """What an embed job did."""

    model: str
    dim: int
    items: int
    computed: int
    cached: int
    repaired: int
    tokens: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "tokens_per_second": round(self.tokens / self.seconds, 1) if self.seconds else None}


def at_key(at: str) -> int:
    """An ISO timestamp as the integer YYYYMMDDHHMMSS that vec0 compares.

    Integer metadata is compared inside the vec0 chunks; text longer than 12
    bytes would need a lookup per row.
    """
    return int(at[0:4] + at[5:7] + at[8:10] + at[11:13] + at[14:16] + at[17:19])


def vec_table_exists(conn: apsw.Connection) -> bool:
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'items_vec'").fetchall())


def count_vectors(conn: apsw.Connection) -> int:
    if not vec_table_exists(conn):
        return 0
    return int(conn.execute("SELECT count(*) FROM items_vec_rowids").fetchall()[0][0])


def delete_item_vectors(conn: apsw.Connection, where: str, params: Sequence[Any]) -> None:
    """Delete the vectors of the items matching ``where`` (a condition on ``items``)."""
    if not vec_table_exists(conn):
        return
    ids = [(r[0],) for r in conn.execute(f"SELECT id FROM items WHERE {where}", tuple(params))]
    conn.executemany("DELETE FROM items_vec WHERE item_id = ?", ids)


def stored_embedder_options(conn: apsw.Connection) -> dict[str, Any]:
    """Options to load the store's model with, so its fingerprint matches (e.g. a Matryoshka dim)."""
    dim = db.get_meta(conn, "embed.dim")
    return {"dim": int(dim)} if dim else {}


def check_model(conn: apsw.Connection, embedder: Embedder) -> None:
    """Refuse a model other than the one that made the store's vectors."""
    stored = db.get_meta(conn, "embed.fingerprint")
    if stored is not None and stored != embedder.fingerprint:
        raise ModelMismatchError(
            f"the store's vectors were made by {db.get_meta(conn, 'embed.model_id')} "
            f"({db.get_meta(conn, 'embed.dim')} dims, fingerprint {stored[:12]}), "
            f"not by {embedder.model_id} ({embedder.dim} dims, fingerprint {embedder.fingerprint[:12]}); "
            "pass --model with the store's model, or re-embed with `memstore embed --force`"
        )


def _create_vec_table(conn: apsw.Connection, embedder: Embedder) -> None:
    conn.execute(
        f"""CREATE VIRTUAL TABLE items_vec USING vec0(
                item_id INTEGER PRIMARY KEY,
                scope_id INTEGER PARTITION KEY,
                role TEXT,
                at INTEGER,
                embedding float[{int(embedder.dim)}] distance_metric=cosine,
                chunk_size={CHUNK_SIZE}
            )"""
    )
    for key, value in (
        ("embed.fingerprint", embedder.fingerprint),
        ("embed.model_id", embedder.model_id),
        ("embed.dim", str(embedder.dim)),
        ("embed.profile", embedder.profile.name),
        ("embed.query_prompt", embedder.profile.query_prompt),
        ("embed.document_prompt", embedder.profile.document_prompt),
        ("embed.model_path", str(getattr(embedder, "path", ""))),
    ):
        db.set_meta(conn, key, value)


def _prepare(conn: apsw.Connection, embedder: Embedder, force: bool) -> None:
    with db.transaction(conn):
        exists = vec_table_exists(conn)
        if exists and force:
            conn.execute("DROP TABLE items_vec")
            conn.execute("DELETE FROM embeddings WHERE fingerprint = ?", (embedder.fingerprint,))
            exists = False
        if exists:
            check_model(conn, embedder)
            # The same model may sit at another path now; remember where.
            db.set_meta(conn, "embed.model_path", str(getattr(embedder, "path", "")))
        else:
            _create_vec_table(conn, embedder)


def text_hash(text: str) -> str:
    """sha256 of the text's UTF-8 bytes, hex: items' ``content_hash`` and the embedding cache's key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_items(
    conn: apsw.Connection,
    embedder: Embedder,
    *,
    scope_id: int | None = None,
    roles: Sequence[str] | None = None,
    force: bool = False,
    batch: int = 64,
    progress: Callable[[EmbedProgress], None] | None = None,
) -> EmbedReport:
    """Embed the items that have no vector, committing after every batch.

    Killing the job loses at most the batch in flight; running it again
    continues where it stopped.
    """
    _prepare(conn, embedder, force)
    where, params = ["NOT EXISTS (SELECT 1 FROM items_vec v WHERE v.item_id = i.id)"], []
    if scope_id is not None:
        where.append("i.scope_id = ?")
        params.append(scope_id)
    if roles:
        where.append(f"i.role IN ({','.join('?' * len(roles))})")
        params += list(roles)
    todo = [r[0] for r in conn.execute(f"SELECT i.id FROM items i WHERE {' AND '.join(where)} ORDER BY i.id", params)]
    dim = embedder.dim
    started = time.perf_counter()
    tokens = computed = cached = repaired = 0
    for start in range(0, len(todo), batch):
        ids = todo[start : start + batch]
        rows = conn.execute(
            f"""SELECT i.id, i.scope_id, i.role, i.at, i.content, se.title
                FROM items i JOIN sessions se ON se.id = i.session_id
                WHERE i.id IN ({','.join('?' * len(ids))})""",
            ids,
        ).fetchall()
        inputs = [
            embedder.document_input(content, title if role == "document" else None)
            for _, _, role, _, content, title in rows
        ]
        hashes = [text_hash(t) for t in inputs]
        vectors, corrupt = _cached_vectors(conn, embedder.fingerprint, hashes, dim)
        repaired += corrupt
        missing = {h: t for h, t in zip(hashes, inputs) if h not in vectors}
        fresh: dict[str, bytes] = {}
        if missing:
            arr, n_tokens = embedder.embed_inputs(list(missing.values()))
            tokens += n_tokens
            fresh = {h: arr[j].astype("<f4").tobytes() for j, h in enumerate(missing)}
        computed += len(fresh)
        cached += len(rows) - sum(1 for h in hashes if h in fresh)
        vectors.update(fresh)
        with db.transaction(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings(text_hash, fingerprint, vector) VALUES (?, ?, ?)",
                [(h, embedder.fingerprint, v) for h, v in fresh.items()],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO items_vec(item_id, scope_id, role, at, embedding) VALUES (?, ?, ?, ?, ?)",
                [
                    (item_id, sid, role, at_key(at), vectors[h])
                    for (item_id, sid, role, at, _, _), h in zip(rows, hashes)
                ],
            )
        if progress is not None:
            progress(
                EmbedProgress(
                    done=start + len(ids),
                    total=len(todo),
                    tokens=tokens,
                    computed=computed,
                    cached=cached,
                    elapsed=time.perf_counter() - started,
                )
            )
    return EmbedReport(
        model=embedder.model_id,
        dim=dim,
        items=len(todo),
        computed=computed,
        cached=cached,
        repaired=repaired,
        tokens=tokens,
        seconds=round(time.perf_counter() - started, 3),
    )


def _cached_vectors(
    conn: apsw.Connection, fingerprint: str, hashes: list[str], dim: int
) -> tuple[dict[str, bytes], int]:
    """Cached vectors by hash, and how many cached rows were the wrong size (to be re-embedded)."""
    found: dict[str, bytes] = {}
    corrupt = 0
    unique = list(dict.fromkeys(hashes))
    rows = conn.execute(
        f"SELECT text_hash, vector FROM embeddings WHERE fingerprint = ? AND text_hash IN ({','.join('?' * len(unique))})",
        [fingerprint, *unique],
    ).fetchall()
    for h, blob in rows:
        if isinstance(blob, bytes) and len(blob) == dim * 4:
            found[h] = blob
        else:
            corrupt += 1
    return found, corrupt


def query_vector(conn: apsw.Connection, embedder: Embedder, query: str) -> bytes:
    """The query's embedding as float32 bytes, after checking the model matches the store."""
    check_model(conn, embedder)
    return embedder.embed_queries([query])[0].astype("<f4").tobytes()
