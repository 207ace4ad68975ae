"""The one place that opens a memstore file.

:func:`connect` checks what the file is before changing anything, loads
sqlite-vec, sets the connection up (WAL, busy timeout, foreign keys) and runs
pending migrations in one transaction.  A file that is not memstore's, or was
written by newer code, is refused before a single byte of it is written.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import apsw

from . import schema
from .errors import DatabaseError, SchemaError

BUSY_TIMEOUT_MS = 5_000


def connect(path: str | os.PathLike[str], *, create: bool = True) -> apsw.Connection:
    """Open (and, if ``create``, create) the memstore database at ``path``.

    A file that cannot be written is opened read-only: reads work, and any
    write fails with a :class:`DatabaseError` that says so.
    """
    p = Path(path)
    if p.is_dir():
        raise DatabaseError(f"{p} is a directory, not a database file")
    exists = p.exists()
    if not exists:
        if not create:
            raise DatabaseError(
                f"no memstore database at {p}; create one with `memstore init` or `memstore import`"
            )
        if not p.parent.is_dir():
            raise DatabaseError(f"cannot create {p}: folder {p.parent} does not exist")
    readonly = exists and not os.access(p, os.W_OK)
    try:
        conn, (version, app_id, n_objects) = _open(p, readonly)
    except apsw.NotADBError:
        raise SchemaError(f"{p} is not a SQLite database") from None
    except apsw.CantOpenError:
        raise DatabaseError(f"cannot open {p}: check that the file and its folder are readable") from None

    if app_id != schema.APPLICATION_ID and (app_id != 0 or n_objects):
        conn.close()
        raise SchemaError(
            f"{p} is a SQLite database, but not a memstore one; give a new path or a memstore .db file"
        )
    if version > schema.SCHEMA_VERSION:
        conn.close()
        raise SchemaError(
            f"{p} has schema version {version}, newer than this memstore understands "
            f"({schema.SCHEMA_VERSION}); upgrade memstore to open it"
        )

    _load_sqlite_vec(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        # WAL with synchronous=NORMAL never corrupts and never loses a committed
        # transaction when the app is killed; only an OS crash may drop the last one.
        conn.execute("PRAGMA synchronous = NORMAL")
    if version < schema.SCHEMA_VERSION:
        if readonly:
            conn.close()
            raise DatabaseError(f"{p} needs a schema upgrade, but the file is read-only")
        _migrate(conn, version)
    return conn


def _open(path: Path, readonly: bool) -> tuple[apsw.Connection, tuple[int, int, int]]:
    if not readonly:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        return conn, _identify(conn)
    uri = path.resolve().as_uri()
    try:
        conn = apsw.Connection(f"{uri}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        return conn, _identify(conn)
    except apsw.CantOpenError:
        # A WAL file needs a writable -shm beside it; a read-only copy in a
        # read-only folder has none, so read it as immutable instead.
        conn = apsw.Connection(f"{uri}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        return conn, _identify(conn)


def _identify(conn: apsw.Connection) -> tuple[int, int, int]:
    """Read (user_version, application_id, number of schema objects) without writing."""
    version = conn.execute("PRAGMA user_version").fetchall()[0][0]
    app_id = conn.execute("PRAGMA application_id").fetchall()[0][0]
    n_objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchall()[0][0]
    return int(version), int(app_id), int(n_objects)


def _sqlite_vec_path() -> str:
    # The path, without importing the sqlite_vec package: its __init__ imports
    # numpy, which would add a tenth of a second to every command.
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the sqlite_vec package is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_sqlite_vec_path())
        conn.enable_load_extension(False)
    except (ImportError, apsw.Error, OSError) as exc:
        raise DatabaseError(
            f"cannot load the sqlite-vec extension ({exc}); reinstall it with `pip install sqlite-vec`"
        ) from None


def _migrate(conn: apsw.Connection, version: int) -> None:
    with transaction(conn):
        for n in range(version, schema.SCHEMA_VERSION):
            conn.execute(schema.MIGRATIONS[n])
        conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION}")
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(schema.SCHEMA_VERSION),),
        )


@contextlib.contextmanager
def transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run a block as one write transaction: all of it commits, or none of it.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so two writers wait on
    the busy timeout instead of deadlocking on a lock upgrade.  Nested use
    joins the outer transaction.
    """
    if not conn.get_autocommit():
        yield conn
        return
    if conn.readonly("main"):
        raise DatabaseError(f"{conn.filename} is read-only; nothing was written")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError:
        raise DatabaseError(f"{conn.filename} is locked by another writer; try again") from None
    try:
        yield conn
    except BaseException:
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except apsw.Error as exc:
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        raise DatabaseError(f"could not commit to {conn.filename}: {exc}") from None


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    """Return one value from the ``meta`` table, or None."""
    rows = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
    return rows[0][0] if rows else None


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    """Set one value in the ``meta`` table (inside the caller's transaction)."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
