"""Evaluate memstore's retrieval and memory text on LongMemEval-S.

Retrieval follows the LongMemEval protocol: the corpus is the history's user
turns, the questions are the non-abstention ones, a turn ranking becomes a
session ranking by first appearance, and recall_all@k / ndcg_any@k are
reported at the session and the turn level.  Session-level evidence is the
question's answer_session_ids; turn-level evidence is the user turns marked
has_answer (questions without such a turn are left out at the turn level).

Memory coverage counts, for each question with evidence, whether every turn
marked has_answer is in the memory text's manifest, uncut, at each budget.

The store is imported once into --db and reused, embeddings included.

    python scripts/eval_longmemeval.py --mode bm25
    python scripts/eval_longmemeval.py --per-type 10 --mode fused --embed
    python scripts/eval_longmemeval.py --long --limit 100 --mode bm25 --no-retrieval
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lme  # noqa: E402
from benchlib import CACHE, S_FILE, machine  # noqa: E402

from memstore import open_store  # noqa: E402
from memstore.dates import as_of_bound, parse_datetime, parse_iso  # noqa: E402
from memstore.legs import Filters  # noqa: E402
from memstore.memory import build_baseline, build_memory  # noqa: E402
from memstore.retrieve import DEFAULT_CANDIDATES, DEFAULT_WEIGHTS, Weights, rank  # noqa: E402
from memstore.store import Store  # noqa: E402
from memstore.vectors import query_vector  # noqa: E402

KS = (5, 10, 50)
BUDGETS_KB = (8, 16, 32, 64, 96, 180)


def progress(label: str, total: int) -> Callable[[int], None]:
    """A plain progress line with an ETA on stderr."""
    start = time.monotonic()
    tty = sys.stderr.isatty()
    step = max(total // 10, 1)

    def tick(done: int) -> None:
        if not tty and done % step and done != total:
            return
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done) if done else 0
        line = f"{label}: {done}/{total}  elapsed {elapsed:5.0f} s  ETA {eta:5.0f} s"
        print(f"\r{line}" if tty else line, end="\n" if done == total or not tty else "", file=sys.stderr,
              flush=True)

    return tick


def ensure_store(db: Path, data: Path, model: str | None, long: bool, limit: int | None) -> Store:
    """Open the eval store, importing the data the first time (the import is atomic, so Ctrl-C is safe)."""
    if not long:
        return lme.open_eval_store(db, data, model)
    db.parent.mkdir(parents=True, exist_ok=True)
    store = open_store(db, model=model)
    if store.stats().scopes == 0:
        path = write_long_jsonl(data, db.with_suffix(".jsonl"), limit)
        print(f"importing S×10 histories from {path} …", file=sys.stderr)
        store.import_file(path)
        path.unlink()
    return store


def write_long_jsonl(data_path: Path, out: Path, limit: int | None) -> Path:
    """S×10 histories as memstore JSONL (labels dropped: they never enter the store)."""
    data = lme.read_json(data_path)
    n = len(data) if limit is None else min(limit, len(data))
    with open(out, "w", encoding="utf-8") as fh:
        for i in range(n):
            q = lme.long_history(data, i)
            for sid, d, turns in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
                # JSONL turns carry no index, so dropping an empty turn shifts the ones after it;
                # in S no empty turn precedes an evidence turn, so evidence indices still hold.
                kept = [{"role": t["role"], "content": t["content"]} for t in turns if t["content"].strip()]
                if kept:
                    fh.write(json.dumps({"scope": q["question_id"], "session": sid, "date": parse_iso(d),
                                         "turns": kept}) + "\n")
    return out


def turn_refs(store: Store, scope: str) -> dict[int, tuple[str, int, str]]:
    """item id → (session key, turn index, role) for a scope."""
    sid = store.scope_id(scope)
    rows = store.conn.execute(
        "SELECT i.id, se.key, i.seq, i.role FROM items i JOIN sessions se ON se.id = i.session_id WHERE i.scope_id = ?",
        (sid,),
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def question_bound(q: lme.Question) -> str:
    when, _ = parse_datetime(q.date)
    return as_of_bound(when.date().isoformat())


def retrieval(store: Store, qs: Sequence[lme.Question], modes: Sequence[str], weights: Weights,
              candidates: int, qvecs: dict[str, bytes], conjunctive: bool = False,
              feedback: bool = True) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    tick = progress("retrieval", len(qs))
    for n, q in enumerate(qs, start=1):
        refs = turn_refs(store, q.id)
        f = Filters(scope_id=store.scope_id(q.id), roles=("user",), as_of=question_bound(q))
        for mode in modes:
            r = rank(store, q.question, f, mode=mode, weights=weights, candidates=candidates, conjunctive=conjunctive,
                     query_vector=qvecs.get(q.id) if mode != "bm25" else None, feedback=feedback)
            turns = [(refs[x.id][0], refs[x.id][1]) for x in r.fused]
            sessions = lme.first_appearance(s for s, _ in turns)
            row: dict[str, Any] = {"id": q.id, "type": q.type}
            for k in KS:
                row[f"session_recall_all@{k}"] = lme.recall_all(sessions, q.answer_sessions, k)
                row[f"session_ndcg_any@{k}"] = lme.ndcg_any(sessions, q.answer_sessions, k)
                if q.user_evidence:
                    row[f"turn_recall_all@{k}"] = lme.recall_all(turns, q.user_evidence, k)
                    row[f"turn_ndcg_any@{k}"] = lme.ndcg_any(turns, q.user_evidence, k)
            rows[mode].append(row)
        tick(n)
    return rows


def coverage(store: Store, qs: Sequence[lme.Question], budgets_kb: Sequence[int], mode: str, weights: Weights,
             qvecs: dict[str, bytes], baselines: Sequence[str], reply_share: float | None,
             select_weights: dict[str, float] | None = None, feedback: bool = False) -> list[dict[str, Any]]:
    rows = []
    tick = progress(f"memory ({mode})", len(qs))
    extra: dict[str, Any] = {"feedback": feedback}
    if reply_share is not None:
        extra["reply_share"] = reply_share
    if select_weights:
        extra["select_weights"] = select_weights
    for n, q in enumerate(qs, start=1):
        evidence = set(q.evidence)
        row: dict[str, Any] = {"id": q.id, "type": q.type, "evidence": len(evidence)}
        qv = qvecs.get(q.id) if mode != "bm25" else None
        for kb in budgets_kb:
            t0 = time.perf_counter()
            m = build_memory(store, q.question, scope=q.id, date=q.date, budget=kb * 1000, mode=mode,
                             weights=weights, query_vector=qv, **extra)
            elapsed = time.perf_counter() - t0
            whole = {(r.session, r.turn) for r in m.refs(whole=True)}
            part = {(r.session, r.turn) for r in m.refs(whole=False)}
            row[f"{kb}KB"] = evidence <= whole
            row[f"{kb}KB_partial_ok"] = evidence <= part
            row[f"{kb}KB_bytes"] = m.bytes
            row[f"{kb}KB_ms"] = round(elapsed * 1000, 2)
            row[f"{kb}KB_log_complete"] = not m.sections["user_log"].sessions and not any(
                e.partial for e in m.sections["user_log"].items)
        for bmode in baselines:
            b = build_baseline(store, q.question, scope=q.id, date=q.date, mode=bmode, weights=weights,
                               query_vector=qvecs.get(q.id) if bmode != "bm25" else None, feedback=feedback)
            row[f"baseline_{bmode}"] = evidence <= {(r.session, r.turn) for r in b.refs()}
            row[f"baseline_{bmode}_bytes"] = b.bytes
        rows.append(row)
        tick(n)
    return rows


def table_retrieval(rows: dict[str, list[dict[str, Any]]]) -> str:
    cols = [f"{lvl}_{m}@{k}" for lvl in ("session", "turn") for m in ("recall_all", "ndcg_any") for k in KS]
    out = ["| mode | n (session / turn) | " + " | ".join(c.replace("_", " ") for c in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for mode, rs in rows.items():
        n_turn = sum(1 for r in rs if "turn_recall_all@5" in r)
        vals = [statistics.mean(r[c] for r in rs if c in r) if any(c in r for r in rs) else float("nan") for c in cols]
        out.append(f"| {mode} | {len(rs)} / {n_turn} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
    return "\n".join(out)


def table_coverage(rows: list[dict[str, Any]], budgets_kb: Sequence[int], baselines: Sequence[str]) -> str:
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    groups = [(t, by_type[t]) for t in lme.TYPES if t in by_type] + [("all", rows)]
    head = ["memory"] + [f"{t} ({len(rs)})" for t, rs in groups] + ["mean bytes", "max bytes"]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]

    def line(label: str, key: str, bytes_key: str) -> str:
        cells = [f"{100 * statistics.mean(bool(r[key]) for r in rs):.1f}%" for _, rs in groups]
        sizes = [r[bytes_key] for r in rows]
        return f"| {label} | " + " | ".join(cells) + f" | {statistics.mean(sizes):,.0f} | {max(sizes):,} |"

    for kb in budgets_kb:
        out.append(line(f"memstore {kb} KB", f"{kb}KB", f"{kb}KB_bytes"))
    for b in baselines:
        out.append(line(f"baseline {b} top-100 in 96 KB", f"baseline_{b}", f"baseline_{b}_bytes"))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=S_FILE)
    ap.add_argument("--db", type=Path, default=None, help="Default: .cache/eval/lme_s.db (or lme_s10.db with --long).")
    ap.add_argument("--out", type=Path, default=None, help="Per-question JSON rows (default beside the db).")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--types", nargs="*")
    ap.add_argument("--questions", nargs="*", help="Question ids.")
    ap.add_argument("--per-type", type=int, help="A stratified subset: N questions per type (fixed seed).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", default="bm25", help="bm25, vector, fused, or a comma list (retrieval rows).")
    ap.add_argument("--weights", default=None, help="lex,tag,vec for fused.")
    ap.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES,
                    help="Candidates per leg (retrieval rows; default: the library's).")
    ap.add_argument("--conjunctive", action="store_true", help="BM25 needs every term (retrieval rows).")
    ap.add_argument("--no-feedback", action="store_true", help="Fused retrieval rows: one pass, no feedback.")
    ap.add_argument("--memory-feedback", action="store_true",
                    help="Memory rows: rank with feedback (the builders' default is one pass).")
    ap.add_argument("--model", default=None, help="GGUF embedding model (default: the MiniLM test model).")
    ap.add_argument("--embed", action="store_true", help="Embed the selected scopes first (resumable).")
    ap.add_argument("--embed-roles", default="user,assistant")
    ap.add_argument("--long", action="store_true", help="The S×10 long histories.")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS_KB)), help="Memory budgets in KB.")
    ap.add_argument("--reply-share", type=float, default=None)
    ap.add_argument("--select-weights", default=None, metavar="REL,DATES,RECENCY",
                    help="Weights that order user messages when the log must be selected.")
    ap.add_argument("--no-retrieval", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--baselines", default="bm25", help="Baseline memories to add (comma list, or 'none').")
    args = ap.parse_args()

    cache = CACHE / "eval"
    db = args.db or cache / ("lme_s10.db" if args.long else "lme_s.db")
    modes = args.mode.split(",")
    weights = Weights.parse(args.weights) if args.weights else DEFAULT_WEIGHTS
    model = args.model
    if model is None and any(m != "bm25" for m in modes):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from build_test_model import ensure_test_model

        model = str(ensure_test_model())

    questions = lme.load_questions(args.data, cache / f"{args.data.name}.questions.json")
    store = ensure_store(db, args.data, model, args.long, args.limit if args.long else None)
    present = {s.name for s in store.scopes()}
    qs = lme.select([q for q in questions if q.id in present], limit=args.limit, types=args.types,
                    ids=args.questions, per_type=args.per_type, seed=args.seed)
    print(f"# LongMemEval-{'S×10' if args.long else 'S'}: {len(qs)} questions; {machine()}")
    print(f"db: {db}; modes: {', '.join(modes)}; weights: {weights}; model: {model or 'none'}\n")

    if args.embed:
        for n, q in enumerate(qs, start=1):
            report = store.embed(scope=q.id, roles=args.embed_roles.split(","))
            print(f"\rembedded {n}/{len(qs)} scopes ({report.computed} new, {report.tokens / max(report.seconds, 1e-9):,.0f} tok/s)",
                  end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)

    qvecs: dict[str, bytes] = {}
    if any(m != "bm25" for m in modes):
        embedder = store.embedder(required=True)
        assert embedder is not None
        t0 = time.perf_counter()
        qvecs = {q.id: query_vector(store.conn, embedder, q.question) for q in qs}
        print(f"query embeddings: {len(qvecs)} in {time.perf_counter() - t0:.1f} s\n")

    results: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "questions": len(qs)}
    if not args.no_retrieval:
        ret_qs = [q for q in qs if not q.abstention]
        rows = retrieval(store, ret_qs, modes, weights, args.candidates, qvecs, args.conjunctive,
                         feedback=not args.no_feedback)
        print("## Retrieval (user-side corpus; non-abstention questions)\n")
        print(table_retrieval(rows) + "\n")
        results["retrieval"] = rows
    if not args.no_memory:
        budgets = [int(b) for b in args.budgets.split(",")]
        baselines = [] if args.baselines == "none" else args.baselines.split(",")
        mem_qs = [q for q in qs if q.evidence]
        mode = modes[-1]
        sel = None
        if args.select_weights:
            rel, dat, rec = (float(x) for x in args.select_weights.split(","))
            sel = {"relevance": rel, "dates": dat, "recency": rec}
        rows_m = coverage(store, mem_qs, budgets, mode, weights, qvecs, baselines, args.reply_share, sel,
                          feedback=args.memory_feedback)
        print(f"## Memory coverage ({mode}; every has_answer turn in the text, uncut)\n")
        print(table_coverage(rows_m, budgets, baselines) + "\n")
        ms = [r[f"{budgets[-1]}KB_ms"] for r in rows_m]
        print(f"memory build at {budgets[-1]} KB: p50 {statistics.median(ms):.1f} ms, "
              f"p95 {sorted(ms)[int(0.95 * (len(ms) - 1))]:.1f} ms (query embedding excluded)\n")
        results["memory"] = rows_m
    out = args.out or db.with_name(db.stem + f"-{'-'.join(modes)}.json")
    out.write_text(json.dumps(results, indent=1))
    print(f"per-question rows: {out}")


if __name__ == "__main__":
    main()
