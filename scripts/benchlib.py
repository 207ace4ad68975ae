"""Helpers shared by the benchmark scripts: machine facts, timing, medians, data paths."""

from __future__ import annotations

import json
import lzma
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
S_FILE = DATA / "longmemeval_s_cleaned_499.json.xz"
CACHE = ROOT / ".cache"


def machine() -> str:
    """One line: CPU model, cores, Python, SQLite, sqlite-vec and llama.cpp versions."""
    import apsw

    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    conn = apsw.Connection(":memory:")
    from memstore.db import _load_sqlite_vec

    _load_sqlite_vec(conn)
    vec = conn.execute("SELECT vec_version()").fetchall()[0][0]
    try:
        import llama_cpp

        llama = f"llama-cpp-python {llama_cpp.__version__}"
    except ImportError:
        llama = "llama-cpp-python not installed"
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}; "
        f"SQLite {apsw.sqlite_lib_version()}; sqlite-vec {vec}; {llama}"
    )


def load_s(path: Path = S_FILE) -> list[dict[str, Any]]:
    """LongMemEval-S, parsed (about 10 s and 1.5 GB)."""
    with lzma.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def median(values: list[float]) -> float:
    return statistics.median(values)


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[idx]
