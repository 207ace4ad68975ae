"""Embedding throughput: `memstore embed` against a bare llama-cpp-python loop, same texts.

Takes N LongMemEval-S turns (a fixed sample of both roles), embeds them
through memstore (a fresh store; truncation to the model's context, the
cache, sqlite-vec writes, one commit per batch) and through a bare loop of
`Llama.embed(text, truncate=True)` calls, in the same run, and prints tokens/s
for each and their ratio (median of --runs).  A second memstore embed of the
same texts in another scope must compute nothing (all cache hits).  With
--variants it also times the bare loop with batched calls and larger batches.

    python scripts/bench_embed.py [--n 2000] [--runs 3] [--variants]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lme  # noqa: E402
from benchlib import S_FILE, machine, median  # noqa: E402

from memstore import open_store  # noqa: E402


def sample_turns(n: int, seed: int = 0) -> list[str]:
    data = lme.read_json(S_FILE)
    turns = [t["content"] for q in data[:60] for s in q["haystack_sessions"] for t in s if t["content"].strip()]
    return random.Random(seed).sample(turns, n)


def memstore_pass(model: str, texts: list[str], tmp: Path) -> tuple[float, int, int, int]:
    """(tokens/s, tokens, computed on the second pass, cached on the second pass)."""
    db = tmp / f"bench-{time.monotonic_ns()}.db"
    with open_store(db, model=model) as store:
        store.add_session("a", "s", "2024-01-01", [{"role": "user", "content": t} for t in texts])
        first = store.embed(batch=64)
        store.add_session("b", "s", "2024-01-01", [{"role": "user", "content": t} for t in texts])
        second = store.embed(batch=64)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return first.tokens / first.seconds, first.tokens, second.computed, second.cached


def bare_pass(model: str, texts: list[str], n_ctx: int, batch: int | None = None, n_batch: int | None = None) -> float:
    """tokens/s of plain llama-cpp-python embedding calls."""
    from llama_cpp import Llama

    nb = n_batch or n_ctx
    llm = Llama(model_path=model, embedding=True, n_ctx=n_ctx, n_batch=nb, n_ubatch=nb,
                n_threads=os.cpu_count(), verbose=False)
    tokens = sum(min(len(llm.tokenize(t.encode("utf-8", "replace"))), n_ctx) for t in texts)
    t0 = time.perf_counter()
    if batch:
        for i in range(0, len(texts), batch):
            llm.embed(texts[i:i + batch], normalize=True, truncate=True)
    else:
        for t in texts:
            llm.embed(t, normalize=True, truncate=True)
    seconds = time.perf_counter() - t0
    llm.close()
    return tokens / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="GGUF embedding model (default: the MiniLM test model).")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", action="store_true")
    args = ap.parse_args()
    model = args.model
    if model is None:
        from build_test_model import ensure_test_model

        model = str(ensure_test_model())
    from memstore.embed import load_embedder

    n_ctx = load_embedder(model).profile.max_tokens or 512
    print(f"machine: {machine()}")
    texts = sample_turns(args.n)
    print(f"model: {Path(model).name}, context {n_ctx} tokens; {len(texts)} LongMemEval-S turns, "
          f"{sum(len(t) for t in texts):,} characters\n")
    ours, bare, second = [], [], None
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            rate, tokens, computed, cached = memstore_pass(model, texts, Path(tmp))
            ours.append(rate)
            second = (computed, cached)
            bare.append(bare_pass(model, texts, n_ctx))
            print(f"  run {run + 1}: memstore {ours[-1]:,.0f} tok/s, bare loop {bare[-1]:,.0f} tok/s", flush=True)
    m, b = median(ours), median(bare)
    print(f"\n| embedding {len(texts)} turns, median of {args.runs} | tokens/s |")
    print("|---|---|")
    print(f"| memstore embed (truncate, cache, sqlite-vec, commit per 64) | {m:,.0f} |")
    print(f"| bare llama-cpp-python loop, one embed() per text | {b:,.0f} |")
    print(f"\nratio memstore / bare: {m / b:.2f}x (target >= 0.9x)")
    assert second is not None
    print(f"second memstore embed of the same texts: {second[0]} computed, {second[1]} cache hits "
          f"({100 * second[1] / len(texts):.0f}%)")
    if args.variants:
        print("\n| bare loop variant | tokens/s |")
        print("|---|---|")
        print(f"| one call per text, n_batch = n_ubatch = {n_ctx} | {bare_pass(model, texts, n_ctx):,.0f} |")
        print(f"| embed() on lists of 100, n_batch = n_ubatch = {n_ctx} | {bare_pass(model, texts, n_ctx, batch=100):,.0f} |")
        print(f"| embed() on lists of 100, n_batch = n_ubatch = 2048 | "
              f"{bare_pass(model, texts, n_ctx, batch=100, n_batch=2048):,.0f} |")


if __name__ == "__main__":
    main()
