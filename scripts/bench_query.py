"""Query and memory-build latency on LongMemEval-S (499 scopes, 246k turns in one file).

Per question, in the question's own scope: BM25-only search, fused search in
one pass and with feedback (the query vector precomputed, so its embedding is
not timed), the memory text,
and the baseline LongMemEval uses, rank_bm25's BM25Okapi (index build plus
query over the same scope).  Each run goes over the questions once; the
figures are the median over runs of each run's p50 and p95.

    python scripts/bench_query.py [--limit 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lme  # noqa: E402
from benchlib import CACHE, S_FILE, machine, median, pct  # noqa: E402

from memstore.store import Store  # noqa: E402
from memstore.vectors import query_vector  # noqa: E402

_TOKEN = re.compile(r"\w+")


def rank_bm25_query(store: Store, scope: str, question: str) -> list[int]:
    """LongMemEval's own retriever: BM25Okapi over the scope's turns, built and queried."""
    from rank_bm25 import BM25Okapi

    items = store.items(scope)
    bm = BM25Okapi([_TOKEN.findall(it.content.lower()) for it in items])
    scores = bm.get_scores(_TOKEN.findall(question.lower()))
    return [items[i].id for i in sorted(range(len(items)), key=lambda i: -scores[i])[:10]]


def ms(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def run_once(store: Store, qs: list[lme.Question], qvecs: dict[str, bytes], with_baseline: bool) -> dict[str, list[float]]:
    t: dict[str, list[float]] = {"bm25": [], "fused_one_pass": [], "fused": [], "memory": [], "rank_bm25": []}
    for q in qs:
        t["bm25"].append(ms(lambda: store.search(q.question, scope=q.id, mode="bm25", as_of=q.date[:10].replace("/", "-"))))
        qv = qvecs.get(q.id)
        if qv is not None:
            t["fused_one_pass"].append(ms(lambda: store.search(q.question, scope=q.id, mode="fused", query_vector=qv,
                                                               as_of=q.date[:10].replace("/", "-"), feedback=False)))
            t["fused"].append(ms(lambda: store.search(q.question, scope=q.id, mode="fused", query_vector=qv,
                                                      as_of=q.date[:10].replace("/", "-"))))
        t["memory"].append(ms(lambda: store.memory(q.question, scope=q.id, date=q.date, query_vector=qv,
                                                   mode="fused" if qv else "bm25")))
        if with_baseline:
            t["rank_bm25"].append(ms(lambda: rank_bm25_query(store, q.id, q.question)))
    return t


def measure(store: Store, qs: list[lme.Question], runs: int, with_baseline: bool = True) -> dict[str, tuple[float, float, int]]:
    """{name: (median p50 ms, median p95 ms, n)} over ``runs`` passes."""
    qvecs: dict[str, bytes] = {}
    embedder = store.embedder()
    if embedder is not None:
        embedded = {r[0] for r in store.conn.execute(
            "SELECT DISTINCT sc.name FROM items_vec v JOIN scopes sc ON sc.id = v.scope_id")}
        qvecs = {q.id: query_vector(store.conn, embedder, q.question) for q in qs if q.id in embedded}
    per_run = [run_once(store, qs, qvecs, with_baseline) for _ in range(runs)]
    out = {}
    for name in per_run[0]:
        if per_run[0][name]:
            out[name] = (median([pct(r[name], 50) for r in per_run]), median([pct(r[name], 95) for r in per_run]),
                         len(per_run[0][name]))
    return out


def print_table(results: dict[str, tuple[float, float, int]], runs: int) -> None:
    labels = {"fused_one_pass": "fused search, one pass (BM25 + vector + tags, k=10, query vector precomputed)",
              "fused": "fused search with feedback, the default (two passes)",
              "bm25": "BM25-only search (k=10)", "memory": "memory text (180 KB; fused where embedded)",
              "rank_bm25": "baseline: rank_bm25 BM25Okapi, build + query, same scope"}
    print(f"| latency, median of {runs} runs | questions | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for name, label in labels.items():
        if name in results:
            p50, p95, n = results[name]
            print(f"| {label} | {n} | {p50:.2f} | {p95:.2f} |")
        else:
            print(f"| {label} | 0 | not measured (no embedded scopes) | |")
    if "rank_bm25" in results and "bm25" in results:
        print(f"\nBM25 p50: memstore {results['bm25'][0]:.2f} ms vs rank_bm25 {results['rank_bm25'][0]:.2f} ms "
              f"({results['rank_bm25'][0] / results['bm25'][0]:.1f}x faster)")
    if "fused" in results:
        print(f"fused p50: one pass {results['fused_one_pass'][0]:.2f} ms, with feedback {results['fused'][0]:.2f} ms "
              f"(target <= 10 ms)")
    print(f"memory p50 {results['memory'][0]:.2f} ms (target <= 50 ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=S_FILE)
    ap.add_argument("--db", type=Path, default=CACHE / "eval" / "lme_s.db")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default=None, help="The store's embedding model (default: as recorded in the store).")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    store = lme.open_eval_store(args.db, args.data, args.model)
    questions = lme.load_questions(args.data, CACHE / "eval" / f"{args.data.name}.questions.json")
    present = {s.name for s in store.scopes()}
    qs = lme.select([q for q in questions if q.id in present], limit=args.limit)
    stats = store.stats()
    print(f"store: {stats.items:,} items in {stats.scopes} scopes, {stats.embedded_items:,} embedded; "
          f"{len(qs)} questions\n")
    print_table(measure(store, qs, args.runs), args.runs)


if __name__ == "__main__":
    main()
