"""Import LongMemEval-S into a fresh file and compare with the floor.

The floor is a bare apsw loop that inserts the same rows into a plain table
and a plain FTS5 table (same tokenizer), one transaction per history.  Both
sides start from the same decompressed JSON file and include parsing it.

    python scripts/bench_import.py [--runs 3] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import S_FILE, load_s, machine, median, timed  # noqa: E402

from memstore import open_store  # noqa: E402
from memstore.schema import FTS_TOKENIZER  # noqa: E402


def floor(json_path: Path, db_path: Path) -> int:
    with open(json_path, encoding="utf-8") as fh:
        data = json.load(fh)
    conn = apsw.Connection(str(db_path))
    conn.execute(
        "CREATE TABLE turns(id INTEGER PRIMARY KEY, scope TEXT, session TEXT, seq INTEGER, role TEXT, at TEXT, content TEXT);"
        f"CREATE VIRTUAL TABLE turns_fts USING fts5(content, tokenize='{FTS_TOKENIZER}');"
    )
    n = 0
    for q in data:
        rows = [
            (q["question_id"], sid, seq, t["role"], date, t["content"])
            for sid, date, turns in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"])
            for seq, t in enumerate(turns)
            if t["content"].strip()
        ]
        with conn:
            conn.executemany("INSERT INTO turns(scope, session, seq, role, at, content) VALUES (?,?,?,?,?,?)", rows)
            conn.executemany("INSERT INTO turns_fts(content) VALUES (?)", [(r[5],) for r in rows])
        n += len(rows)
    conn.close()
    return n


def memstore_import(json_path: Path, db_path: Path) -> int:
    with open_store(db_path) as store:
        return store.import_file(json_path).items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=S_FILE)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="Only the first N questions.")
    args = ap.parse_args()

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        data = load_s(args.data)[: args.limit]
        json_path = tmpdir / "s.json"
        json_path.write_text(json.dumps(data), encoding="utf-8")
        text_bytes = sum(
            len(t["content"].encode()) for q in data for s in q["haystack_sessions"] for t in s if t["content"].strip()
        )
        del data
        print(f"data: {args.data.name}, {json_path.stat().st_size:,} bytes of JSON, {text_bytes:,} bytes of text")
        results: dict[str, list[float]] = {"memstore": [], "floor": []}
        sizes: dict[str, int] = {}
        turns = 0
        for run in range(args.runs):
            for name, fn in (("floor", floor), ("memstore", memstore_import)):
                db_path = tmpdir / f"{name}-{run}.db"
                seconds, turns = timed(lambda: fn(json_path, db_path))
                results[name].append(seconds)
                sizes[name] = db_path.stat().st_size
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db_path}{suffix}").unlink(missing_ok=True)
                print(f"  run {run + 1}: {name:8s} {seconds:7.2f} s", flush=True)
    m, f = median(results["memstore"]), median(results["floor"])
    print()
    print(f"| import of {turns:,} turns (median of {args.runs}) | seconds | turns/s | DB bytes / text bytes |")
    print("|---|---|---|---|")
    print(f"| memstore | {m:.2f} | {turns / m:,.0f} | {sizes['memstore'] / text_bytes:.2f} |")
    print(f"| floor: bare apsw table + FTS5 | {f:.2f} | {turns / f:,.0f} | {sizes['floor'] / text_bytes:.2f} |")
    print(f"\nratio memstore / floor: {m / f:.2f}x (target <= 1.3x); memstore all of S in {m:.1f} s (target <= 60 s)")


if __name__ == "__main__":
    main()
