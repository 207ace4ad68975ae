"""Truncate or chunk? Vector retrieval of long assistant replies, both ways, on LongMemEval-S.

In single-session-assistant questions the evidence is an assistant reply,
often longer than the model's context.  For a stratified sample of those
questions this embeds every assistant reply of each history twice, truncated
to the model's context and chunked (windows of the context, mean of the unit
vectors), and reports where the vector leg alone ranks the evidence reply
among the history's assistant replies.

    python scripts/measure_long_text.py [--questions 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lme  # noqa: E402
from benchlib import CACHE, S_FILE, machine  # noqa: E402

from memstore import open_store  # noqa: E402
from memstore.embed import load_embedder  # noqa: E402
from memstore.legs import Filters, vector  # noqa: E402
from memstore.vectors import embed_items  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=15)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    model = args.model
    if model is None:
        from build_test_model import ensure_test_model

        model = str(ensure_test_model())
    questions = lme.load_questions(S_FILE, CACHE / "eval" / f"{S_FILE.name}.questions.json")
    qs = lme.select(questions, types=["single-session-assistant"], per_type=args.questions, seed=1)
    qs = [q for q in qs if q.evidence and all(ev not in q.user_evidence for ev in q.evidence)]
    wanted = {q.id for q in qs}
    data = [d for d in lme.read_json(S_FILE) if d["question_id"] in wanted]
    print(f"machine: {machine()}\nmodel: {Path(model).name}; {len(qs)} single-session-assistant questions\n")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "subset.json"
        import json

        src.write_text(json.dumps(data))
        rows = {}
        for mode in ("truncate", "chunk"):
            store = open_store(Path(tmp) / f"{mode}.db")
            store.import_file(src)
            embedder = load_embedder(model, long_text=mode)
            t0 = time.perf_counter()
            report = embed_items(store.conn, embedder, roles=["assistant"], batch=64)
            seconds = time.perf_counter() - t0
            ranks = []
            for q in qs:
                sid = store.scope_id(q.id)
                qv = embedder.embed_queries([q.question])[0].astype("<f4").tobytes()
                ids = vector(store.conn, qv, Filters(sid, roles=("assistant",)), 4096)
                refs = {i.id: (i.session, i.turn) for i in store.items(q.id, roles=["assistant"])}
                ranked = [refs[i] for i in ids]
                ranks.append(min(ranked.index(ev) + 1 for ev in q.evidence if ev in ranked))
            rows[mode] = (ranks, report.tokens, seconds)
            store.close()
    print("| long texts | evidence reply rank: median | recall@1 | recall@5 | recall@10 | MRR | tokens embedded | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, (ranks, tokens, seconds) in rows.items():
        def at(k: int) -> float:
            return sum(r <= k for r in ranks) / len(ranks)

        mrr = statistics.mean(1 / r for r in ranks)
        print(f"| {mode} | {statistics.median(ranks):.0f} | {at(1):.2f} | {at(5):.2f} | {at(10):.2f} | {mrr:.3f} | "
              f"{tokens:,} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
