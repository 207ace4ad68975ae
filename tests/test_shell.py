"""The file opens in the stock sqlite3 shell: integrity check, tables, views, FTS5 MATCH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memstore import open_store
from tests.conftest import DEMO

SQLITE3 = shutil.which("sqlite3")
pytestmark = pytest.mark.skipif(SQLITE3 is None, reason="the sqlite3 shell is not installed (.ci/run installs it)")


def shell(db: Path, sql: str) -> str:
    proc = subprocess.run([SQLITE3, "-bail", str(db)], input=sql, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    return proc.stdout


@pytest.fixture
def demo_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo.db"
    with open_store(path) as store:
        store.import_file(DEMO)
    return path


def test_shell_reads_the_file(demo_file: Path) -> None:
    assert shell(demo_file, "PRAGMA integrity_check;").strip() == "ok"
    assert shell(demo_file, "SELECT count(*) FROM items;").strip() == "20"
    assert shell(demo_file, "SELECT name FROM scopes ORDER BY name;").split() == ["demo", "team"]
    log = shell(demo_file, "SELECT session_date, content FROM user_log WHERE scope = 'demo' LIMIT 1;")
    assert log.startswith("2024-03-02T09:15:00|I adopted a kitten")
    timeline = shell(demo_file, "SELECT author, tags FROM timeline WHERE scope = 'team';")
    assert timeline.split() == ["alice|database,decision", "bob|database,decision"]


def test_shell_matches_the_fts_index(demo_file: Path) -> None:
    out = shell(
        demo_file,
        "SELECT i.content FROM items_fts JOIN items i ON i.id = items_fts.rowid "
        "WHERE items_fts MATCH 'vaccines' ORDER BY rank;",
    )
    assert out.startswith("Took Pixel to the vet yesterday")
    # porter stemming works from the shell too: 'kittens' finds the three turns that say 'kitten'
    assert shell(demo_file, "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'kittens';").strip() == "3"
    assert shell(demo_file, "INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1);") == ""
