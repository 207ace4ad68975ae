"""The :class:`Store`: scopes, sessions and items in one SQLite file.

Every write is one transaction.  Importing a file is one transaction too, so
a bad line anywhere leaves the store exactly as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import apsw

from . import db, vectors
from .dates import parse_iso
from .errors import InputError, NotFoundError, UsageError
from .formats import SessionRecord, check_text, normalise_tags, read_sessions, session_json
from .models import ROLES, ImportReport, Item, ScopeInfo, Session, Stats, Turn

if TYPE_CHECKING:
    from .embed import Embedder
    from .memory import Memory, SessionView
    from .models import Hits
    from .retrieve import SearchOptions

Progress = Callable[[int, int], None]

_ITEM_COLUMNS = "i.id, sc.name, se.key, i.seq, i.role, i.author, i.at, i.content"

#: Imports of at least this many items end by merging the FTS5 index.
OPTIMIZE_AFTER = 10_000
#: FTS5's default incremental merge setting, restored after an import.
FTS_AUTOMERGE = 4
#: Sessions indexed by FTS5 per statement during an import.
FTS_BATCH = 256


def open_store(path: str | os.PathLike[str], *, create: bool = True, model: str | None = None) -> Store:
    """Open the memstore database at ``path``, creating it when ``create`` is true.

    ``model`` is the path of a GGUF embedding model; when None, the model is
    found as described in :func:`memstore.download.resolve_model_path`.
    """
    return Store(db.connect(path, create=create), Path(path), model=model)


class Store:
    """A memstore database.  Use :func:`open_store` to get one."""

    def __init__(self, conn: apsw.Connection, path: Path, *, model: str | None = None) -> None:
        self.conn = conn
        self.path = path
        self._model_arg = model
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        #: Things the caller should tell the user once (e.g. "BM25 only").
        self.notices: list[str] = []

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def notice(self, message: str) -> None:
        """Record a message for the user, once."""
        if message not in self.notices:
            self.notices.append(message)

    # -- scopes ------------------------------------------------------------

    def scope_id(self, name: str) -> int:
        """The id of scope ``name``; a :class:`NotFoundError` naming the scopes there are if none."""
        rows = self.conn.execute("SELECT id FROM scopes WHERE name = ?", (name,)).fetchall()
        if rows:
            return int(rows[0][0])
        names = [r[0] for r in self.conn.execute("SELECT name FROM scopes ORDER BY name LIMIT 11")]
        if not names:
            raise NotFoundError(f"no scope {name!r}: the store is empty; import something first")
        if len(names) <= 10:
            raise NotFoundError(f"no scope {name!r}; scopes: {', '.join(names)}")
        total = self.conn.execute("SELECT count(*) FROM scopes").fetchall()[0][0]
        raise NotFoundError(f"no scope {name!r} among {total} scopes; list them with `memstore scopes`")

    def scopes(self) -> list[ScopeInfo]:
        """Every scope, with counts and its first and last session dates."""
        rows = self.conn.execute(
            """SELECT sc.name,
                      (SELECT count(*) FROM sessions se WHERE se.scope_id = sc.id),
                      (SELECT count(*) FROM items i WHERE i.scope_id = sc.id),
                      (SELECT min(started_at) FROM sessions se WHERE se.scope_id = sc.id),
                      (SELECT max(started_at) FROM sessions se WHERE se.scope_id = sc.id)
               FROM scopes sc ORDER BY sc.name"""
        )
        return [ScopeInfo(*r) for r in rows]

    def delete_scope(self, name: str) -> None:
        """Delete a scope and everything in it."""
        sid = self.scope_id(name)
        with db.transaction(self.conn):
            vectors.delete_item_vectors(self.conn, "scope_id = ?", (sid,))
            self.conn.execute("DELETE FROM scopes WHERE id = ?", (sid,))

    # -- sessions ----------------------------------------------------------

    def add_session(
        self,
        scope: str,
        key: str,
        date: str,
        turns: Sequence[Turn | dict[str, Any]],
        *,
        title: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Session:
        """Store one session, replacing any session with the same scope and key.

        ``date`` is an ISO-8601 date or timestamp.  Each turn is a :class:`Turn`
        or a dict with the JSONL turn fields (``role``, ``content``, and
        optionally ``author``, ``date``, ``tags``).
        """
        rec = self._record(scope, key, date, turns, title, meta)
        scopes = _ScopeCache()
        with db.transaction(self.conn), _fts_deferred(self.conn):
            self._write_session(rec, scopes)
            scopes.index_pending(self.conn)
        return self.session(scope, key)

    def _record(
        self,
        scope: str,
        key: str,
        date: str,
        turns: Sequence[Turn | dict[str, Any]],
        title: str | None,
        meta: dict[str, Any] | None,
    ) -> SessionRecord:
        for name, value in (("scope", scope), ("session key", key)):
            if not isinstance(value, str):
                raise InputError(f"{name} must be a string")
            check_text(value, name)
        started_at = parse_iso(date)
        out: list[tuple[int, Turn]] = []
        for i, t in enumerate(turns):
            if isinstance(t, dict):
                t = Turn(
                    role=t.get("role", ""),
                    content=t.get("content", ""),
                    author=t.get("author"),
                    at=t.get("date") or t.get("at"),
                    tags=tuple(t.get("tags", ())),
                )
            if t.role not in ROLES:
                raise InputError(f"turns[{i}]: role is {t.role!r}; use one of: {', '.join(ROLES)}")
            if not isinstance(t.content, str):
                raise InputError(f"turns[{i}]: content must be a string")
            check_text(t.content, f"turns[{i}]: content")
            at = parse_iso(t.at) if t.at else started_at
            out.append((i, Turn(t.role, t.content, t.author, at, normalise_tags(t.tags))))
        return SessionRecord(scope, key, started_at, out, title=title, meta=meta)

    def _write_session(self, rec: SessionRecord, scopes: _ScopeCache) -> str:
        """Insert or replace one session (inside the caller's transaction).

        Returns "added", "replaced" or "unchanged".
        """
        conn = self.conn
        sid, created = scopes.get(conn, rec.scope)
        hashes = [vectors.text_hash(t.content) for _, t in rec.turns]
        digest = rec.digest(hashes)
        # A scope this import created holds only the keys this import wrote.
        maybe_old = not created or scopes.seen(sid, rec.key)
        old = (
            conn.execute("SELECT id, digest FROM sessions WHERE scope_id = ? AND key = ?", (sid, rec.key)).fetchall()
            if maybe_old
            else []
        )
        status = "added"
        if old:
            if old[0][1] == digest:
                return "unchanged"
            # The delete trigger removes the old items from FTS5, so they must be in it.
            scopes.index_pending(conn)
            vectors.delete_item_vectors(conn, "session_id = ?", (old[0][0],))
            conn.execute("DELETE FROM sessions WHERE id = ?", (old[0][0],))
            status = "replaced"
        conn.execute(
            "INSERT INTO sessions(scope_id, key, started_at, title, meta, digest) VALUES (?, ?, ?, ?, ?, ?)",
            (
                sid,
                rec.key,
                rec.started_at,
                rec.title,
                None if rec.meta is None else json.dumps(rec.meta, ensure_ascii=False, sort_keys=True),
                digest,
            ),
        )
        session_id = conn.last_insert_rowid()
        conn.executemany(
            "INSERT INTO items(session_id, scope_id, seq, role, author, at, content, content_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(session_id, sid, i, t.role, t.author, t.at, t.content, h) for (i, t), h in zip(rec.turns, hashes)],
        )
        scopes.unindexed.append(session_id)
        if len(scopes.unindexed) >= FTS_BATCH:
            scopes.index_pending(conn)
        tagged = [(tag, session_id, i) for i, t in rec.turns for tag in t.tags]
        if tagged:
            conn.executemany(
                "INSERT OR IGNORE INTO item_tags(item_id, tag)"
                " SELECT id, ? FROM items WHERE session_id = ? AND seq = ?",
                tagged,
            )
        return status

    def delete_session(self, scope: str, key: str) -> None:
        """Delete one session and its items."""
        session_id = self._session_id(scope, key)
        with db.transaction(self.conn):
            vectors.delete_item_vectors(self.conn, "session_id = ?", (session_id,))
            self.conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def _session_id(self, scope: str, key: str) -> int:
        sid = self.scope_id(scope)
        rows = self.conn.execute("SELECT id FROM sessions WHERE scope_id = ? AND key = ?", (sid, key)).fetchall()
        if not rows:
            raise NotFoundError(f"no session {key!r} in scope {scope!r}; list them with `memstore sessions`")
        return int(rows[0][0])

    def sessions(self, scope: str) -> list[Session]:
        """The sessions of a scope, oldest first, without their items."""
        sid = self.scope_id(scope)
        rows = self.conn.execute(
            """SELECT se.key, se.started_at, se.title, se.meta,
                      (SELECT count(*) FROM items i WHERE i.session_id = se.id)
               FROM sessions se WHERE se.scope_id = ? ORDER BY se.started_at, se.key""",
            (sid,),
        )
        return [Session(scope, key, at, title, _meta(m), n_items=n) for key, at, title, m, n in rows]

    def session(self, scope: str, key: str) -> Session:
        """One session with all its items."""
        session_id = self._session_id(scope, key)
        key_, at, title, meta = self.conn.execute(
            "SELECT key, started_at, title, meta FROM sessions WHERE id = ?", (session_id,)
        ).fetchall()[0]
        items = self._items("i.session_id = ?", (session_id,), order="i.seq")
        return Session(scope, key_, at, title, _meta(meta), items=tuple(items), n_items=len(items))

    # -- items -------------------------------------------------------------

    def items(self, scope: str, *, roles: Iterable[str] | None = None) -> list[Item]:
        """The items of a scope in time order (by ``at``, then session, then turn)."""
        sid = self.scope_id(scope)
        where, params = "i.scope_id = ?", [sid]
        if roles is not None:
            roles = list(roles)
            where += f" AND i.role IN ({','.join('?' * len(roles))})"
            params += roles
        return self._items(where, params, order="i.at, se.started_at, se.key, i.seq")

    def items_by_id(self, ids: Sequence[int]) -> dict[int, Item]:
        """Items by id (those that exist)."""
        out: dict[int, Item] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            placeholders = ",".join("?" * len(chunk))
            for item in self._items(f"i.id IN ({placeholders})", chunk, order="i.id"):
                out[item.id] = item
        return out

    def _items(self, where: str, params: Sequence[Any], *, order: str) -> list[Item]:
        rows = self.conn.execute(
            f"""SELECT {_ITEM_COLUMNS},
                       (SELECT group_concat(t.tag, char(31)) FROM item_tags t WHERE t.item_id = i.id)
                FROM items i JOIN sessions se ON se.id = i.session_id JOIN scopes sc ON sc.id = i.scope_id
                WHERE {where} ORDER BY {order}""",
            tuple(params),
        )
        return [Item(*r[:8], tags=tuple(r[8].split("\x1f")) if r[8] else ()) for r in rows]

    # -- import / export ---------------------------------------------------

    def import_file(
        self, path: str | os.PathLike[str], *, fmt: str | None = None, progress: Progress | None = None
    ) -> ImportReport:
        """Import a memstore JSONL or LongMemEval file, all or nothing.

        Sessions whose scope and key exist are replaced (or skipped when
        unchanged).  ``progress(done, total)`` is called with bytes read when
        the size is known.
        """
        p = Path(path)
        from .formats import detect_format

        fmt = fmt or detect_format(p)
        counts = {"added": 0, "replaced": 0, "unchanged": 0}
        n_items = skipped = 0
        scopes = _ScopeCache()
        seen_scopes: set[str] = set()
        with db.transaction(self.conn), _fts_deferred(self.conn):
            self.conn.execute("PRAGMA cache_size = -131072")
            # No incremental FTS5 merges while loading: one 'optimize' at the end
            # does that work once (10% faster on LongMemEval-S).
            self.conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('automerge', 0)")
            for n, rec in enumerate(read_sessions(p, fmt), start=1):
                counts[self._write_session(rec, scopes)] += 1
                seen_scopes.add(rec.scope)
                n_items += len(rec.turns)
                skipped += rec.skipped_empty
                if progress is not None:
                    progress(n, 0)
            scopes.index_pending(self.conn)
            if n_items >= OPTIMIZE_AFTER:
                # Merge the segments the load left into one b-tree: about 20%
                # off every later query.
                self.conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
            self.conn.execute(f"INSERT INTO items_fts(items_fts, rank) VALUES ('automerge', {FTS_AUTOMERGE})")
        return ImportReport(
            path=str(p),
            format=fmt,
            scopes=len(seen_scopes),
            sessions_added=counts["added"],
            sessions_replaced=counts["replaced"],
            sessions_unchanged=counts["unchanged"],
            items=n_items,
            skipped_empty=skipped,
        )

    def export(self, out: IO[str], *, scope: str | None = None) -> int:
        """Write memstore JSONL to ``out``: scopes by name, sessions by date.  Returns the session count."""
        where, params = "", ()
        if scope is not None:
            where, params = "WHERE sc.id = ?", (self.scope_id(scope),)
        sessions = self.conn.execute(
            f"""SELECT se.id, sc.name, se.key, se.started_at, se.title, se.meta
                FROM sessions se JOIN scopes sc ON sc.id = se.scope_id {where}
                ORDER BY sc.name, se.started_at, se.key""",
            params,
        ).fetchall()
        for session_id, scope_name, key, at, title, meta in sessions:
            turns = [
                Turn(it.role, it.content, it.author, it.at, it.tags)
                for it in self._items("i.session_id = ?", (session_id,), order="i.seq")
            ]
            out.write(session_json(scope_name, key, at, title, _meta(meta), turns))
            out.write("\n")
        return len(sessions)

    def stats(self) -> Stats:
        """Counts and sizes for the whole store."""
        q = self.conn.execute
        by_role = dict(q("SELECT role, count(*) FROM items GROUP BY role ORDER BY role").fetchall())
        page_count = q("PRAGMA page_count").fetchall()[0][0]
        page_size = q("PRAGMA page_size").fetchall()[0][0]
        return Stats(
            path=str(self.path),
            file_bytes=int(page_count * page_size),
            scopes=q("SELECT count(*) FROM scopes").fetchall()[0][0],
            sessions=q("SELECT count(*) FROM sessions").fetchall()[0][0],
            items=sum(by_role.values()),
            items_by_role=by_role,
            text_bytes=q("SELECT coalesce(sum(length(CAST(content AS BLOB))), 0) FROM items").fetchall()[0][0],
            embedded_items=vectors.count_vectors(self.conn),
            embedding_model=db.get_meta(self.conn, "embed.model_id"),
            schema_version=q("PRAGMA user_version").fetchall()[0][0],
        )

    # -- embeddings --------------------------------------------------------

    def stored_model_path(self) -> str | None:
        """The path of the model that made this store's vectors, as last recorded."""
        return db.get_meta(self.conn, "embed.model_path")

    def embedder(self, *, required: bool = False) -> Embedder | None:
        """The embedding model for this store, loaded once; None when there is none.

        With ``required``, a missing model raises a :class:`ModelError` that
        says how to get one.
        """
        if not self._embedder_loaded:
            from .download import resolve_model_path
            from .embed import load_embedder

            path = resolve_model_path(self._model_arg, self.stored_model_path())
            if path is not None:
                try:
                    self._embedder = load_embedder(path, **vectors.stored_embedder_options(self.conn))
                except UsageError:
                    # Another model, which cannot take the store's options: load it
                    # plainly and let the fingerprint check name both models.
                    self._embedder = load_embedder(path)
            self._embedder_loaded = True
        if self._embedder is None and required:
            from .errors import ModelError

            raise ModelError(
                "no embedding model: run `memstore model pull` to download EmbeddingGemma, "
                "or pass --model PATH (or set MEMSTORE_MODEL) to a GGUF embedding model"
            )
        return self._embedder

    def embed(
        self,
        *,
        scope: str | None = None,
        roles: Sequence[str] | None = None,
        force: bool = False,
        batch: int = 64,
        progress: Callable[[vectors.EmbedProgress], None] | None = None,
    ) -> vectors.EmbedReport:
        """Embed every item that has no vector yet (or all of them, with ``force``)."""
        if batch <= 0:
            raise UsageError("--batch must be at least 1")
        embedder = self.embedder(required=True)
        assert embedder is not None
        scope_id = self.scope_id(scope) if scope is not None else None
        return vectors.embed_items(
            self.conn, embedder, scope_id=scope_id, roles=roles, force=force, batch=batch, progress=progress
        )

    # -- retrieval ---------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        scope: str,
        options: SearchOptions | None = None,
        query_vector: bytes | None = None,
        **kwargs: Any,
    ) -> Hits:
        """Search one scope.  Keyword arguments are :class:`SearchOptions` fields.

        >>> store.search("kitten's name", scope="alice", as_of="2023-05-30", k=5)
        """
        from .retrieve import SearchOptions, search

        opts = options or SearchOptions(**kwargs)
        return search(self, query, scope=scope, options=opts, query_vector=query_vector)

    def memory(self, question: str, *, scope: str, date: str, **kwargs: Any) -> Memory:
        """The memory text for a question asked on ``date``; see :func:`memstore.memory.build_memory`."""
        from .memory import build_memory

        return build_memory(self, question, scope=scope, date=date, **kwargs)

    def sessions_view(self, question: str, *, scope: str, date: str, **kwargs: Any) -> SessionView:
        """Whole sessions for a second read; see :func:`memstore.memory.build_sessions_view`."""
        from .memory import build_sessions_view

        return build_sessions_view(self, question, scope=scope, date=date, **kwargs)


@contextlib.contextmanager
def _fts_deferred(conn: apsw.Connection) -> Iterator[None]:
    """Within the caller's transaction: the FTS insert trigger stands aside; the writer indexes.

    The flag lives in ``meta`` only inside the transaction, so a crash rolls it
    back with everything else and other writers never see it.
    """
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('fts.deferred', '1')")
    try:
        yield
    finally:
        if not conn.get_autocommit():
            conn.execute("DELETE FROM meta WHERE key = 'fts.deferred'")


class _ScopeCache:
    """Scope ids looked up during one write, and the session keys written to scopes it created."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[int, bool]] = {}
        self._keys: dict[int, set[str]] = {}
        #: Sessions written whose items FTS5 has not indexed yet (see _fts_deferred).
        self.unindexed: list[int] = []

    def index_pending(self, conn: apsw.Connection) -> None:
        """Index the items of the sessions written since the last call, in one statement."""
        if self.unindexed:
            conn.execute(
                "INSERT INTO items_fts(rowid, content, scope_id) SELECT id, content, scope_id FROM items"
                f" WHERE session_id IN ({','.join('?' * len(self.unindexed))})",
                self.unindexed,
            )
            self.unindexed.clear()

    def get(self, conn: apsw.Connection, name: str) -> tuple[int, bool]:
        """(scope id, whether this write created the scope)."""
        hit = self._ids.get(name)
        if hit is None:
            rows = conn.execute("SELECT id FROM scopes WHERE name = ?", (name,)).fetchall()
            if rows:
                hit = (int(rows[0][0]), False)
            else:
                conn.execute("INSERT INTO scopes(name) VALUES (?)", (name,))
                hit = (int(conn.last_insert_rowid()), True)
            self._ids[name] = hit
        return hit

    def seen(self, scope_id: int, key: str) -> bool:
        """Whether ``key`` was already written to ``scope_id``; records it either way."""
        keys = self._keys.setdefault(scope_id, set())
        if key in keys:
            return True
        keys.add(key)
        return False


def _meta(raw: str | None) -> dict[str, Any] | None:
    return None if raw is None else json.loads(raw)
