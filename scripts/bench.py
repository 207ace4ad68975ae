"""Every performance figure in one run, each beside its baseline, as the median of --runs.

    python scripts/bench.py [--runs 3] [--quick]

- import: memstore vs a bare apsw table + FTS5 insert loop (bench_import.py);
- embedding: `memstore embed` vs a bare llama-cpp-python loop (bench_embed.py);
- query: fused and BM25 p50/p95 vs rank_bm25, and memory build p50/p95 (bench_query.py);
- file size: DB bytes per text byte;
- scale: synthetic single-scope stores of 100k and 1M turns: import time, query p50, file size.

--quick shrinks every part (a 50-question import, 300 texts to embed, 60 queries,
a 100k-turn scale store only), for a smoke run.  The full run takes about half an
hour on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_embed  # noqa: E402
import bench_import  # noqa: E402
import bench_query  # noqa: E402
import lme  # noqa: E402
from benchlib import CACHE, S_FILE, load_s, machine, median, pct, timed  # noqa: E402

from memstore import open_store  # noqa: E402
from memstore.vectors import embed_items  # noqa: E402


START = datetime(2015, 1, 1, 9, 0)


class HashEmbedder:
    """Deterministic pseudo-random unit vectors from the text's hash.

    For the scale figures only: they measure storage and KNN cost at 1M
    vectors, which no real model here could embed in a benchmark's time.
    """

    def __init__(self, dim: int = 384) -> None:
        import numpy as np

        from memstore.embed import PROFILES

        self.np = np
        self.dim = dim
        self.model_id = "hash-embedder"
        self.fingerprint = hashlib.sha256(b"hash-embedder-%d" % dim).hexdigest()
        self.profile = PROFILES["generic"]

    def query_input(self, text: str) -> str:
        return text

    def document_input(self, text: str, title: str | None = None) -> str:
        return text

    def embed_inputs(self, inputs: list[str]) -> tuple[Any, int]:
        np = self.np
        out = np.empty((len(inputs), self.dim), dtype=np.float32)
        for i, t in enumerate(inputs):
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out, 0

    def embed_queries(self, texts: list[str]) -> Any:
        return self.embed_inputs(texts)[0]


def synthetic_jsonl(path: Path, n_turns: int, seed: int = 0) -> int:
    """A single-scope history of n_turns generated turns (Zipf-distributed words), 10 per session."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    text_bytes = 0
    with open(path, "w") as fh:
        for s in range(n_turns // 10):
            day = (START + timedelta(hours=s)).isoformat()
            turns = []
            for t in range(10):
                text = " ".join(rng.choices(vocab, weights, k=rng.randint(10, 60)))
                text_bytes += len(text)
                turns.append({"role": "user" if t % 2 == 0 else "assistant", "content": text})
            fh.write(json.dumps({"scope": "big", "session": f"s{s}", "date": day, "turns": turns}) + "\n")
    return text_bytes


def scale(n_turns: int, runs: int, tmp: Path) -> dict[str, Any]:
    src = tmp / f"synthetic-{n_turns}.jsonl"
    text_bytes = synthetic_jsonl(src, n_turns)
    db = tmp / f"scale-{n_turns}.db"
    store = open_store(db)
    seconds, _ = timed(lambda: store.import_file(src))
    embed_s, _ = timed(lambda: embed_items(store.conn, HashEmbedder(), batch=2048))
    rng = random.Random(1)
    queries = [" ".join(f"w{rng.randint(0, 2000)}" for _ in range(6)) for _ in range(30)]
    emb = HashEmbedder()
    qvecs = [emb.embed_queries([q])[0].astype("<f4").tobytes() for q in queries]
    bm, f1, fu = [], [], []
    for _ in range(runs):
        tb, t1, tf = [], [], []
        for q, qv in zip(queries, qvecs):
            tb.append(timed(lambda: store.search(q, scope="big", mode="bm25"))[0] * 1000)
            t1.append(timed(lambda: store.search(q, scope="big", mode="fused", query_vector=qv,
                                                 feedback=False))[0] * 1000)
            tf.append(timed(lambda: store.search(q, scope="big", mode="fused", query_vector=qv))[0] * 1000)
        bm.append(pct(tb, 50))
        f1.append(pct(t1, 50))
        fu.append(pct(tf, 50))
    size = store.stats().file_bytes
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    src.unlink()
    return {"turns": n_turns, "import_s": seconds, "vectors_s": embed_s, "bm25_p50": median(bm),
            "fused1_p50": median(f1), "fused_p50": median(fu), "bytes": size, "text_bytes": text_bytes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip", default="", help="Parts to skip: import,embed,query,scale (comma list).")
    ap.add_argument("--embed-texts", type=int, default=500,
                    help="Turns to embed (bench_embed.py runs the full 2,000 with variants).")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print(f"# memstore benchmarks\nmachine: {machine()}\nruns: {args.runs} (medians)\n")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if "import" not in skip:
            data = load_s()[: 50 if args.quick else None]
            src = tmp / "s.json"
            src.write_text(json.dumps(data))
            text_bytes = sum(len(t["content"].encode()) for q in data for s in q["haystack_sessions"] for t in s)
            del data
            ours, floor, size = [], [], 0
            for run in range(args.runs):
                floor.append(timed(lambda: bench_import.floor(src, tmp / f"f{run}.db"))[0])
                ours.append(timed(lambda: bench_import.memstore_import(src, tmp / f"m{run}.db"))[0])
                size = (tmp / f"m{run}.db").stat().st_size
            print("## Import (LongMemEval-S" + (", first 50 questions" if args.quick else "") + ")\n")
            print("| | seconds | vs floor |\n|---|---|---|")
            print(f"| memstore import | {median(ours):.2f} | {median(ours) / median(floor):.2f}x |")
            print(f"| floor: bare apsw table + FTS5 loop | {median(floor):.2f} | 1.00x |")
            print(f"\nfile size: {size / text_bytes:.2f} DB bytes per text byte (FTS5 index included, no vectors)\n")
        if "embed" not in skip:
            from build_test_model import ensure_test_model

            model = str(ensure_test_model())
            texts = bench_embed.sample_turns(300 if args.quick else args.embed_texts)
            ours_e, bare_e = [], []
            for _ in range(args.runs):
                ours_e.append(bench_embed.memstore_pass(model, texts, tmp)[0])
                bare_e.append(bench_embed.bare_pass(model, texts, 512))
            print(f"## Embedding ({len(texts)} LongMemEval-S turns, all-MiniLM-L6-v2 f16)\n")
            print("| | tokens/s | vs bare |\n|---|---|---|")
            print(f"| memstore embed | {median(ours_e):,.0f} | {median(ours_e) / median(bare_e):.2f}x |")
            print(f"| bare llama-cpp-python loop | {median(bare_e):,.0f} | 1.00x |\n")
        if "query" not in skip:
            store = lme.open_eval_store(CACHE / "eval" / "lme_s.db", S_FILE)
            questions = lme.load_questions(S_FILE, CACHE / "eval" / f"{S_FILE.name}.questions.json")
            qs = lme.select(questions, limit=60 if args.quick else None)
            print(f"## Query and memory build (LongMemEval-S store, {len(qs)} questions)\n")
            bench_query.print_table(bench_query.measure(store, qs, args.runs), args.runs)
            print()
        if "scale" not in skip:
            print("## Scale (one synthetic scope; hash vectors, 384 dims)\n")
            print("| turns | import s | vectors s | BM25 p50 ms | fused p50 ms, one pass | fused p50 ms, with feedback "
                  "| file MB | bytes per text byte |")
            print("|---|---|---|---|---|---|---|---|")
            for n in (100_000,) if args.quick else (100_000, 1_000_000):
                r = scale(n, args.runs, tmp)
                print(f"| {n:,} | {r['import_s']:.1f} | {r['vectors_s']:.1f} | {r['bm25_p50']:.2f} | "
                      f"{r['fused1_p50']:.2f} | {r['fused_p50']:.2f} | {r['bytes'] / 1e6:,.0f} | "
                      f"{r['bytes'] / r['text_bytes']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
