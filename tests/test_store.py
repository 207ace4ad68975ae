"""The store: opening files, the schema, import, export and replacement."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import lzma
import os
import stat
import subprocess
from pathlib import Path

import apsw
import pytest

from memstore import DatabaseError, InputError, NotFoundError, SchemaError, open_store
from memstore import schema
from memstore.db import connect
from tests.conftest import DEMO, session, write_jsonl


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export_text(store) -> str:
    buf = io.StringIO()
    store.export(buf)
    return buf.getvalue()


# -- opening ---------------------------------------------------------------


def test_new_file_is_marked_and_configured(db_path: Path) -> None:
    conn = connect(db_path)
    assert conn.execute("PRAGMA application_id").fetchall()[0][0] == schema.APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == schema.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchall()[0][0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchall()[0][0] > 0
    assert conn.execute("SELECT vec_version()").fetchall()[0][0].startswith("v")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"scopes", "sessions", "items", "item_tags", "items_fts", "embeddings", "meta", "user_log", "timeline"} <= tables
    conn.close()


def test_reopen_does_not_migrate_again(db_path: Path) -> None:
    open_store(db_path).close()
    before = file_digest(db_path)
    open_store(db_path).close()
    assert file_digest(db_path) == before


def test_newer_schema_is_refused_and_untouched(db_path: Path) -> None:
    open_store(db_path).close()
    conn = apsw.Connection(str(db_path))
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = file_digest(db_path)
    with pytest.raises(SchemaError, match="newer than this memstore"):
        open_store(db_path)
    assert file_digest(db_path) == before


def test_foreign_sqlite_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE notes(x); INSERT INTO notes VALUES (1)")
    conn.close()
    before = file_digest(path)
    with pytest.raises(SchemaError, match="not a memstore one"):
        open_store(path)
    assert file_digest(path) == before
    assert not Path(str(path) + "-wal").exists()


def test_non_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("this is not a database, just a long enough text file " * 20)
    before = file_digest(path)
    with pytest.raises(SchemaError, match="not a SQLite database"):
        open_store(path)
    assert file_digest(path) == before


def test_directory_as_db_path(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="is a directory"):
        open_store(tmp_path)


def test_missing_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="no memstore database"):
        open_store(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="does not exist"):
        open_store(tmp_path / "no" / "such" / "x.db")


@contextlib.contextmanager
def read_only(path: Path):
    """Make a file read-only, for root too (root ignores mode bits, not the immutable flag)."""
    if os.geteuid() != 0:
        path.chmod(stat.S_IRUSR | stat.S_IRGRP)
        try:
            yield
        finally:
            path.chmod(stat.S_IRUSR | stat.S_IWUSR)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("running as root on a file system without chattr +i: cannot make a file read-only")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_read_only_file_reads_but_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with open_store(path) as s:
        s.import_file(DEMO)
    assert not Path(f"{path}-wal").exists()  # a clean close checkpoints the WAL away
    with read_only(path):
        before = file_digest(path)
        with open_store(path) as s:
            assert [sc.name for sc in s.scopes()] == ["demo", "team"]
            assert s.search("kitten", scope="demo", mode="bm25", k=1)
            with pytest.raises(DatabaseError, match="read-only"):
                s.add_session("demo", "new", "2024-05-01", [{"role": "user", "content": "hi"}])
            with pytest.raises(DatabaseError, match="read-only"):
                s.import_file(DEMO)
        assert file_digest(path) == before


# -- the data model --------------------------------------------------------


def test_add_session_and_read_back(store) -> None:
    s = store.add_session(
        "alice",
        "s1",
        "2024-03-02",
        [
            {"role": "user", "content": "I named my kitten Pixel.", "tags": ["Pets", "pets", " cat "]},
            {"role": "assistant", "content": "Lovely name!", "author": "bot", "date": "2024-03-02T10:05"},
        ],
        title="Kitten",
        meta={"source": "test"},
    )
    assert s.started_at == "2024-03-02T00:00:00"
    assert s.title == "Kitten" and s.meta == {"source": "test"}
    first, second = s.items
    assert (first.turn, first.role, first.at, first.tags) == (0, "user", "2024-03-02T00:00:00", ("cat", "pets"))
    assert (second.author, second.at) == ("bot", "2024-03-02T10:05:00")
    assert first.ref.to_json() == {"session": "s1", "turn": 0}
    row = store.conn.execute("SELECT content_hash FROM items WHERE id = ?", (first.id,)).fetchall()[0][0]
    assert row == hashlib.sha256("I named my kitten Pixel.".encode()).hexdigest()


def test_replacing_a_session_keeps_fts_in_sync(store) -> None:
    store.add_session("a", "s1", "2024-01-01", [{"role": "user", "content": "the aardvark sleeps"}])
    store.add_session("a", "s1", "2024-01-02", [{"role": "user", "content": "the zebra runs"}])
    assert [h.item.content for h in store.search("aardvark", scope="a", mode="bm25", latest_slots=0)] == []
    assert [h.item.content for h in store.search("zebra", scope="a", mode="bm25", latest_slots=0)] == ["the zebra runs"]
    assert store.conn.execute("SELECT count(*) FROM items").fetchall()[0][0] == 1
    store.conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
    store.delete_session("a", "s1")
    assert store.conn.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'zebra'").fetchall()[0][0] == 0
    store.conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")


def test_scopes_are_separate(store) -> None:
    store.add_session("a", "s1", "2024-01-01", [{"role": "user", "content": "blue whale"}])
    store.add_session("b", "s1", "2024-01-01", [{"role": "user", "content": "blue jay"}])
    hits = store.search("blue", scope="b", mode="bm25", latest_slots=0)
    assert [h.item.content for h in hits] == ["blue jay"]


def test_unknown_scope_names_the_scopes(demo_store) -> None:
    with pytest.raises(NotFoundError, match="scopes: demo, team"):
        demo_store.sessions("nobody")


def test_delete_scope(demo_store) -> None:
    demo_store.delete_scope("team")
    assert [s.name for s in demo_store.scopes()] == ["demo"]
    assert demo_store.conn.execute("SELECT count(*) FROM item_tags").fetchall()[0][0] == 0


# -- import ----------------------------------------------------------------


def test_reimport_replaces_and_never_duplicates(store, tmp_path: Path) -> None:
    first = store.import_file(DEMO)
    assert (first.sessions_added, first.items) == (7, 20)
    again = store.import_file(DEMO)
    assert (again.sessions_added, again.sessions_replaced, again.sessions_unchanged) == (0, 0, 7)
    assert store.stats().items == 20
    lines = DEMO.read_text().splitlines()
    changed = json.loads(lines[0])
    changed["turns"][0]["content"] = "I adopted a kitten and named her Nova."
    path = write_jsonl(tmp_path / "changed.jsonl", [changed])
    third = store.import_file(path)
    assert (third.sessions_added, third.sessions_replaced) == (0, 1)
    assert store.stats().items == 20
    assert store.session("demo", changed["session"]).items[0].content.endswith("Nova.")


def test_duplicate_session_in_one_file_keeps_the_last(store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [session("k", turns=[{"role": "user", "content": "one"}]),
                                               session("k", turns=[{"role": "user", "content": "two"}])])
    store.import_file(path)
    assert [i.content for i in store.session("s", "k").items] == ["two"]
    store.conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
    assert store.search("two", scope="s", mode="bm25", latest_slots=0)
    assert not store.search("one", scope="s", mode="bm25", latest_slots=0)


def test_bad_line_aborts_whole_file(demo_store, tmp_path: Path) -> None:
    before = export_text(demo_store)
    sessions = [session(f"k{i}", scope="demo") for i in range(70)]
    sessions[56]["turns"][0]["role"] = "narrator"
    path = write_jsonl(tmp_path / "bad.jsonl", sessions)
    with pytest.raises(InputError) as exc:
        demo_store.import_file(path)
    assert f"{path}:57" in str(exc.value) and "role" in str(exc.value) and "narrator" in str(exc.value)
    assert export_text(demo_store) == before
    assert demo_store.stats().sessions == 7


BAD_LINES = [
    ("{not json", "not valid JSON"),
    ('["a list"]', "must be a JSON object"),
    (json.dumps({"session": "k", "date": "2024-01-01", "turns": []}), "scope is missing"),
    (json.dumps({"scope": 5, "session": "k", "date": "2024-01-01", "turns": []}), "scope must be a string"),
    (json.dumps({"scope": "s", "date": "2024-01-01", "turns": []}), "session is missing"),
    (json.dumps({"scope": "s", "session": "k", "turns": []}), "date is missing"),
    (json.dumps({"scope": "s", "session": "k", "date": "yesterday", "turns": []}), "'yesterday' is not a date"),
    (json.dumps({"scope": "s", "session": "k", "date": "2024-02-30", "turns": []}), "date"),
    (json.dumps({"scope": "s", "session": "k", "date": 20240101, "turns": []}), "date must be a date string"),
    (json.dumps({"scope": "s", "session": "k", "date": "2024-01-01"}), "turns must be a list"),
    (json.dumps({"scope": "s", "session": "k", "date": "2024-01-01", "turns": "hi"}), "turns must be a list"),
    (json.dumps({"scope": "s", "session": "k", "date": "2024-01-01", "turns": [], "extra": 1}), "unknown field 'extra'"),
    (json.dumps(session("k", turns=[{"role": "user"}])), "turns[0]: content is missing"),
    (json.dumps(session("k", turns=[{"role": "user", "content": 7}])), "content must be a string"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "  "}])), "content is empty"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "a\u0000b"}])), "NUL character"),
    (json.dumps(session("k", turns=[{"role": "robot", "content": "x"}])), "role is 'robot'"),
    (json.dumps(session("k", turns=[{"content": "x"}])), "role is missing"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "x", "date": "soon"}])), "'soon' is not a date"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "x", "tags": "a"}])), "tags must be a list"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "x", "tags": [""]}])), "tags must be a list"),
    (json.dumps(session("k", turns=[{"role": "user", "content": "\ud800"}])), "not valid Unicode"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_bad_input_is_named_and_nothing_is_stored(store, tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(session("good")) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        store.import_file(path)
    assert message in str(exc.value)
    assert f"{path}:2" in str(exc.value)
    assert store.stats().sessions == 0


def test_invalid_utf8_is_named(store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(session("good")).encode() + b"\n" + b'{"scope": "s\xff\xfe"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: invalid UTF-8"):
        store.import_file(path)
    assert store.stats().sessions == 0


def test_empty_file(store, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(InputError, match="empty"):
        store.import_file(path)
    path.write_text("\n\n  \n")
    with pytest.raises(InputError, match="empty"):
        store.import_file(path)


def test_missing_and_directory_import_paths(store, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        store.import_file(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        store.import_file(tmp_path)


def test_ten_megabyte_turn_is_stored_whole_and_searchable(store, tmp_path: Path) -> None:
    big = ("lorem ipsum dolor sit amet " * 400_000)[:10_000_000] + " unicornfinale"
    path = write_jsonl(tmp_path / "big.jsonl", [session("big", turns=[{"role": "document", "content": big}])])
    store.import_file(path)
    item = store.session("s", "big").items[0]
    assert len(item.content) == len(big)
    hits = store.search("unicornfinale", scope="s", mode="bm25", latest_slots=0)
    assert [h.item.id for h in hits] == [item.id]


def test_compressed_jsonl(store, tmp_path: Path) -> None:
    raw = DEMO.read_bytes()
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "d.jsonl.xz").write_bytes(lzma.compress(raw))
    assert store.import_file(tmp_path / "d.jsonl.gz").sessions_added == 7
    assert store.import_file(tmp_path / "d.jsonl.xz").sessions_unchanged == 7


def test_damaged_compressed_file(store, tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(DEMO.read_bytes())[:200])
    with pytest.raises(InputError, match="damaged"):
        store.import_file(path)
    assert store.stats().sessions == 0


# -- export ----------------------------------------------------------------


def test_export_import_export_is_identical(demo_store, tmp_path: Path) -> None:
    first = export_text(demo_store)
    path = tmp_path / "export.jsonl"
    path.write_text(first, encoding="utf-8")
    with open_store(tmp_path / "copy.db") as copy:
        copy.import_file(path)
        second = export_text(copy)
    assert second == first
    assert len(first.splitlines()) == 7
    team = [json.loads(line) for line in first.splitlines() if '"team"' in line]
    assert team[0]["turns"][0] == {
        "role": "document",
        "content": "Decision: we store memory in PostgreSQL with pgvector.",
        "author": "alice",
        "tags": ["database", "decision"],
    }
    assert team[0]["title"] == "Database choice"


def test_export_one_scope(demo_store) -> None:
    buf = io.StringIO()
    assert demo_store.export(buf, scope="team") == 2
    assert all(json.loads(line)["scope"] == "team" for line in buf.getvalue().splitlines())


def test_views_for_the_shell(demo_store) -> None:
    rows = demo_store.conn.execute("SELECT scope, session_date, content FROM user_log WHERE scope = 'demo'").fetchall()
    assert len(rows) == 9
    assert rows[0][2].startswith("I adopted a kitten")
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    tl = demo_store.conn.execute("SELECT role, author, tags FROM timeline WHERE scope = 'team'").fetchall()
    assert tl == [("document", "alice", "database,decision"), ("document", "bob", "database,decision")]


def test_insert_from_outside_memstore_is_still_indexed(demo_store) -> None:
    conn = demo_store.conn
    session_id, scope_id = conn.execute("SELECT id, scope_id FROM sessions WHERE key = '2024-03-20-vet'").fetchall()[0]
    conn.execute(
        "INSERT INTO items(session_id, scope_id, seq, role, at, content, content_hash)"
        " VALUES (?, ?, 9, 'user', '2024-03-20T12:06:00', 'the axolotl tank needs a filter', 'x')",
        (session_id, scope_id),
    )
    assert [h.item.turn for h in demo_store.search("axolotl", scope="demo", mode="bm25", latest_slots=0)] == [9]
    assert conn.execute("SELECT count(*) FROM meta WHERE key = 'fts.deferred'").fetchall()[0][0] == 0
    conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")


def test_migration_from_version_1(db_path: Path) -> None:
    conn = apsw.Connection(str(db_path))
    with conn:
        conn.execute(schema.MIGRATIONS[0])
        conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}; PRAGMA user_version = 1")
        conn.execute("INSERT INTO scopes(name) VALUES ('old');"
                     "INSERT INTO sessions(scope_id, key, started_at, digest) VALUES (1, 'k', '2024-01-01T00:00:00', 'd');"
                     "INSERT INTO items(session_id, scope_id, seq, role, at, content, content_hash)"
                     " VALUES (1, 1, 0, 'user', '2024-01-01T00:00:00', 'written by version one', 'h')")
    conn.close()
    with open_store(db_path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchall()[0][0] == schema.SCHEMA_VERSION
        trigger = store.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'items_fts_insert'").fetchall()[0][0]
        assert "fts.deferred" in trigger
        assert [h.item.content for h in store.search("version", scope="old", mode="bm25", latest_slots=0)] == [
            "written by version one"]
        store.add_session("old", "k2", "2024-01-02", [{"role": "user", "content": "and version two"}])
        assert len(store.search("version", scope="old", mode="bm25", latest_slots=0)) == 2
        store.conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
