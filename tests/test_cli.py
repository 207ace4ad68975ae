"""The command line, run for real in subprocesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import apsw
import pytest

from memstore import schema
from tests.conftest import DEMO, run_cli, session, write_jsonl


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    r = run_cli("--db", str(path), "import", str(DEMO))
    assert r.code == 0, r.err
    return path


def assert_error(r, code: int, fragment: str) -> None:
    assert r.code == code, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("memstore: error: "), r.err
    assert fragment in lines[0], r.err
    assert "Traceback" not in r.err


def test_help_lists_every_command() -> None:
    r = run_cli("--help")
    assert r.code == 0
    for command in ("init", "import", "export", "scopes", "sessions", "show", "stats", "search", "embed", "model"):
        assert command in r.out


def test_help_and_bm25_search_never_import_llama(demo_db: Path) -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('memstore', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "bad = [m for m in sys.modules if m.startswith(('llama_cpp', 'numpy'))]\n"
        "print('LOADED', bad, file=sys.stderr)\n"
    )
    import subprocess

    for args in (["memstore", "--help"], ["memstore", "--db", str(demo_db), "search", "kitten", "--scope", "demo",
                                           "--mode", "bm25"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert "LOADED []" in proc.stderr, proc.stderr


def test_init_import_and_list(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("--db", str(db), "init").code == 0
    r = run_cli("import", str(DEMO), "--db", str(db), "--json")
    assert r.code == 0, r.err
    assert r.json()["import"]["sessions_added"] == 7
    scopes = run_cli("scopes", "--json", env={"MEMSTORE_DB": str(db)}).json()
    assert [s["name"] for s in scopes] == ["demo", "team"]
    sessions = run_cli("sessions", "--scope", "demo", "--json", "--db", str(db)).json()
    assert sessions[0] == {"session": "2024-03-02-kitten", "date": "2024-03-02T09:15:00", "title": None, "items": 4}
    shown = run_cli("show", "2024-03-02-kitten", "--scope", "demo", "--json", "--db", str(db)).json()
    assert shown["items"][0]["session"] == "2024-03-02-kitten" and shown["items"][0]["turn"] == 0
    assert "Pixel" in run_cli("show", "2024-03-02-kitten", "--scope", "demo", "--db", str(db)).out
    stats = run_cli("stats", "--json", "--db", str(db)).json()
    assert stats["items"] == 20 and stats["scopes"] == 2 and stats["schema_version"] == schema.SCHEMA_VERSION


def test_db_env_and_group_option(demo_db: Path, tmp_path: Path) -> None:
    by_env = run_cli("stats", "--json", env={"MEMSTORE_DB": str(demo_db)})
    by_group = run_cli("--db", str(demo_db), "stats", "--json")
    by_command = run_cli("stats", "--json", "--db", str(demo_db))
    assert by_env.json()["items"] == by_group.json()["items"] == by_command.json()["items"] == 20
    default = run_cli("stats", cwd=tmp_path)
    assert_error(default, 1, "no memstore database at memstore.db")


def test_search_json_uses_item_references(demo_db: Path) -> None:
    r = run_cli("search", "my grey tabby kitten", "--scope", "demo", "--db", str(demo_db), "--json", "-k", "3",
                "--latest-slots", "0")
    assert r.code == 0, r.err
    data = r.json()
    assert data["hits"][0]["session"] == "2024-03-02-kitten"
    assert data["hits"][0]["turn"] == 0
    assert any("BM25 only" in n for n in data["notices"])
    assert r.err == ""


def test_search_text_output_says_bm25_once(demo_db: Path) -> None:
    r = run_cli("search", "Lisbon", "--scope", "demo", "--db", str(demo_db))
    assert r.code == 0
    assert "Lisbon" in r.out
    assert r.err.count("BM25 only") == 1


def test_export_round_trip(demo_db: Path, tmp_path: Path) -> None:
    first = run_cli("export", "--db", str(demo_db))
    assert first.code == 0
    path = tmp_path / "e.jsonl"
    path.write_text(first.out)
    copy = tmp_path / "copy.db"
    assert run_cli("import", str(path), "--db", str(copy)).code == 0
    assert run_cli("export", "--db", str(copy)).out == first.out


def test_import_error_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    bad = write_jsonl(tmp_path / "bad.jsonl", [session("a"), session("b", turns=[{"role": "user", "content": ""}])])
    assert_error(run_cli("import", str(bad), "--db", str(db)), 1, "bad.jsonl:2: turns[0]: content is empty")
    assert run_cli("stats", "--json", "--db", str(db)).json()["sessions"] == 0


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["import", "/no/such/file.jsonl"], 1, "no such file"),
        (["search", "x", "--scope", "nobody"], 1, "no scope 'nobody'; scopes: demo, team"),
        (["search", "", "--scope", "demo"], 2, "the query is empty"),
        (["search", "?!", "--scope", "demo"], 2, "only punctuation"),
        (["search", "x", "--scope", "demo", "-k", "0"], 2, "k must be at least 1"),
        (["search", "x", "--scope", "demo", "--as-of", "someday"], 1, "'someday' is not a date"),
        (["search", "x", "--scope", "demo", "--weights", "1,-1,1"], 2, "must not be negative"),
        (["search", "x", "--scope", "demo", "--weights", "0,0,0"], 2, "at least one weight"),
        (["search", "x", "--scope", "demo", "--weights", "1,2"], 2, "three numbers"),
        (["search", "x", "--scope", "demo", "--mode", "magic"], 2, "'magic' is not one of"),
        (["search", "x"], 2, "Missing option '--scope'"),
        (["show", "nope", "--scope", "demo"], 1, "no session 'nope'"),
        (["frobnicate"], 2, "No such command"),
    ],
)
def test_errors_are_one_line(demo_db: Path, args: list[str], code: int, fragment: str) -> None:
    assert_error(run_cli("--db", str(demo_db), *args), code, fragment)


def test_bad_db_paths(tmp_path: Path) -> None:
    assert_error(run_cli("--db", str(tmp_path), "stats"), 1, "is a directory")
    foreign = tmp_path / "foreign.db"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    assert_error(run_cli("--db", str(foreign), "import", str(DEMO)), 1, "not a memstore one")
    newer = tmp_path / "newer.db"
    assert run_cli("--db", str(newer), "init").code == 0
    conn = apsw.Connection(str(newer))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    assert_error(run_cli("--db", str(newer), "stats"), 1, "schema version 99")
    text = tmp_path / "text.db"
    text.write_text("hello " * 1000)
    assert_error(run_cli("--db", str(text), "stats"), 1, "not a SQLite database")


def test_fts_operators_search_as_plain_words(demo_db: Path) -> None:
    for query in ['"Pixel', 'NEAR(kitten vet)', "kit*", "-kitten", "content:Pixel", "(Pixel", 'Pixel" OR "',
                  "AND OR NOT", "^Pixel", "{content}: x"]:
        r = run_cli("search", "--scope", "demo", "--db", str(demo_db), "--json", "--mode", "bm25", "--", query)
        assert r.code == 0, (query, r.err)
    r = run_cli("search", 'NEAR("Pixel"', "--scope", "demo", "--db", str(demo_db), "--json", "--latest-slots", "0")
    assert [h["session"] for h in r.json()["hits"]][:1] == ["2024-03-02-kitten"]
