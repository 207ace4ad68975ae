"""Shared fixtures: real database files on disk, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstore import open_store

pytest_plugins = ["tests.model_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "memstore" / "examples" / "demo.jsonl"
SHARED_DATA = ROOT.parent / "shared" / "data"


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, input: str | None = None) -> CliResult:
    """Run ``python -m memstore`` in a real subprocess."""
    full_env = {**os.environ, "MEMSTORE_CACHE_DIR": os.environ.get("MEMSTORE_CACHE_DIR", "/nonexistent-memstore-cache")}
    full_env.pop("MEMSTORE_DB", None)
    full_env.pop("MEMSTORE_MODEL", None)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "memstore", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        input=input,
        timeout=300,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db_path: Path):
    s = open_store(db_path)
    yield s
    s.close()


@pytest.fixture
def demo_store(db_path: Path):
    s = open_store(db_path)
    s.import_file(DEMO)
    yield s
    s.close()


def write_jsonl(path: Path, sessions: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    return path


def session(key: str, date: str = "2024-01-01T10:00:00", scope: str = "s", turns: list[dict[str, Any]] | None = None,
            **extra: Any) -> dict[str, Any]:
    return {"scope": scope, "session": key, "date": date,
            "turns": turns or [{"role": "user", "content": f"hello from {key}"}], **extra}
