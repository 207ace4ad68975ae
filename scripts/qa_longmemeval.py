"""Answer LongMemEval questions with memstore and judge the answers with a model.

Each selected question is answered ``--runs`` times by :func:`memstore.answer.answer`
(first read plus the re-read rules) against any OpenAI-compatible endpoint, and
each answer is judged yes/no by a judge model with a prompt per question type,
following LongMemEval's criteria.  Reported: mean accuracy over the runs,
questions correct in at least two of three runs (a majority of the runs),
accuracy per type, the rules that fired, tokens and cost per answer.

Every model call is cached on disk (``.cache/qa/``), keyed by the hash of the
model, the endpoint, the messages and the parameters (the run number
included, so runs stay independent; the same messages twice within one
answer, as in the second decline check, are two calls): a rerun with the
same inputs makes no call.  Failed calls are not cached; rerun to fill them in.

    export MEMSTORE_ANSWER_API_KEY=...        # never a flag
    python scripts/qa_longmemeval.py --per-type 5 --model-name gpt-5-mini \\
        --judge-model gpt-4o-2024-08-06 --price gpt-5-mini=0.25,2 --price gpt-4o-2024-08-06=2.5,10

The store is the one scripts/eval_longmemeval.py builds (.cache/eval/lme_s.db),
imported on first use (lme.open_eval_store).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lme  # noqa: E402
from benchlib import CACHE, S_FILE  # noqa: E402

from memstore import open_store  # noqa: E402
from memstore.answer import (  # noqa: E402
    DEFAULT_MAX_TOKENS,
    ENV_API_KEY,
    Backend,
    ChatReply,
    Message,
    OpenAIBackend,
    answer,
    safe_url,
)
from memstore.errors import MemstoreError  # noqa: E402
from memstore.memory import DEFAULT_BUDGET  # noqa: E402
from memstore.store import Store  # noqa: E402

ENV_JUDGE_KEY = "MEMSTORE_JUDGE_API_KEY"

# -- judge prompts (LongMemEval's criteria, in our words) ---------------------------------

_ASK = "\n\nIs the model response correct? Answer yes or no only."

JUDGE_STANDARD = (
    "I will show you a question, the correct answer, and a response from a model. Answer yes if the response "
    "contains the correct answer. Also answer yes if the response is equivalent to the correct answer, or if it "
    "contains all the intermediate steps needed to reach it. Answer no if the response gives only part of the "
    "information the correct answer requires, or gives a different answer."
    "{extra}\n\nQuestion: {question}\n\nCorrect answer: {answer}\n\nModel response: {response}" + _ASK
)
TEMPORAL_EXTRA = (
    " Do not penalise off-by-one errors in a number of days, weeks or months: if the question asks how many "
    "days (or weeks, months and so on) and the response is one more or one fewer than the correct number, "
    "the response is still correct."
)
UPDATE_EXTRA = (
    " If the response also mentions earlier information along with the updated answer, it is correct as long "
    "as the updated answer is the one it gives as current."
)
JUDGE_PREFERENCE = (
    "I will show you a question, a rubric describing the personalised response the user would want, and a "
    "response from a model. Answer yes if the response satisfies the rubric. It does not need to reflect every "
    "point of the rubric: it is correct as long as it recalls and uses the user's personal information "
    "correctly.\n\nQuestion: {question}\n\nRubric: {answer}\n\nModel response: {response}"
    "\n\nIs the model response correct? Answer yes or no only."
)
JUDGE_ABSTENTION = (
    "I will show you a question that cannot be answered from the user's conversation history, an explanation "
    "of why, and a response from a model. Answer yes if the response correctly identifies the question as "
    "unanswerable: it may say that the information is missing or incomplete, or that some related information "
    "is there but not what was asked. Answer no if it answers the question as if it could."
    "\n\nQuestion: {question}\n\nExplanation: {answer}\n\nModel response: {response}"
    "\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only."
)


def judge_prompt(q: lme.Question, reference: str, response: str) -> str:
    """The yes/no prompt for one answer, by the question's type (abstention first, as in LongMemEval)."""
    fields = {"question": q.question, "answer": reference, "response": response}
    if q.abstention:
        return JUDGE_ABSTENTION.format(**fields)
    if q.type == "single-session-preference":
        return JUDGE_PREFERENCE.format(**fields)
    extra = {"temporal-reasoning": TEMPORAL_EXTRA, "knowledge-update": UPDATE_EXTRA}.get(q.type, "")
    return JUDGE_STANDARD.format(extra=extra, **fields)


def verdict(text: str) -> bool:
    """The judge's yes or no: its first word, else whether it says yes at all."""
    words = "".join(ch if ch.isalpha() else " " for ch in text.lower()).split()
    if words and words[0] in ("yes", "no"):
        return words[0] == "yes"
    return "yes" in words


# -- the call cache --------------------------------------------------------------------


@dataclass
class CallStats:
    made: int = 0
    cached: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, cached: bool) -> None:
        with self.lock:
            if cached:
                self.cached += 1
            else:
                self.made += 1


class CachedBackend:
    """A backend whose replies are kept on disk, keyed by model, endpoint, messages and parameters."""

    def __init__(self, inner: Backend, cache_dir: Path, stats: CallStats, *, run: int, endpoint: str) -> None:
        self.inner, self.cache_dir, self.stats = inner, cache_dir, stats
        self.model = inner.model
        self.context_tokens = inner.context_tokens
        self.run, self.endpoint = run, endpoint
        # The same messages twice in one answer (the second decline check) are two calls, as they would be
        # uncached; counting repeats keeps them apart and the keys stable across reruns.
        self._seen: Counter[str] = Counter()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def close(self) -> None:
        pass  # the inner backend is shared and closed by its owner

    def key(self, messages: Sequence[Message], temperature: float, max_tokens: int, repeat: int = 0) -> str:
        blob = json.dumps({"model": self.model, "endpoint": self.endpoint, "messages": list(messages),
                           "params": {"temperature": temperature, "max_tokens": max_tokens, "run": self.run,
                                      "repeat": repeat}},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def chat(self, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = DEFAULT_MAX_TOKENS) -> ChatReply:
        first = self.key(messages, temperature, max_tokens)
        key = self.key(messages, temperature, max_tokens, self._seen[first]) if self._seen[first] else first
        self._seen[first] += 1
        path = self.cache_dir / key[:2] / f"{key}.json"
        if path.exists():
            self.stats.count(cached=True)
            return ChatReply(**json.loads(path.read_text(encoding="utf-8")))
        reply = self.inner.chat(messages, temperature=temperature, max_tokens=max_tokens)
        self.stats.count(cached=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(asdict(reply), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a killed run never leaves half a reply
        return reply


# -- running -----------------------------------------------------------------------------


@dataclass
class Row:
    id: str
    type: str
    abstention: bool
    run: int
    answer: str = ""
    correct: bool = False
    judge_reply: str = ""
    rules: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


def load_answers(data_path: Path, cache: Path) -> dict[str, str]:
    """question id → reference answer (lme.Question leaves answers out), cached like the questions."""
    stamp = f"{data_path.resolve()}:{data_path.stat().st_size}:{data_path.stat().st_mtime_ns}"
    if cache.exists():
        blob = json.loads(cache.read_text())
        if blob.get("source") == stamp:
            return blob["answers"]
    answers = {q["question_id"]: str(q.get("answer", "")) for q in lme.read_json(data_path)}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"source": stamp, "answers": answers}))
    return answers


class Runner:
    """Answers and judges (question, run) pairs; one store connection per worker thread."""

    def __init__(self, args: argparse.Namespace, answer_backend: Backend, judge_backend: Backend,
                 answers: dict[str, str], stats: CallStats) -> None:
        self.args, self.answers, self.stats = args, answers, stats
        self.answer_backend, self.judge_backend = answer_backend, judge_backend
        self.answer_endpoint = safe_url(getattr(answer_backend, "base_url", ""))
        self.judge_endpoint = safe_url(getattr(judge_backend, "base_url", ""))
        self._local = threading.local()
        self._stores: list[Store] = []
        self._lock = threading.Lock()

    def store(self) -> Store:
        s = getattr(self._local, "store", None)
        if s is None:
            s = open_store(self.args.db, create=False, model=self.args.embed_model)
            self._local.store = s
            with self._lock:
                self._stores.append(s)
        return s

    def close(self) -> None:
        for s in self._stores:
            s.close()

    def run_one(self, q: lme.Question, run: int) -> Row:
        row = Row(q.id, q.type, q.abstention, run)
        t0 = time.perf_counter()
        try:
            backend = CachedBackend(self.answer_backend, self.args.cache_dir, self.stats, run=run,
                                    endpoint=self.answer_endpoint)
            result = answer(self.store(), q.question, scope=q.id, date=q.date, backend=backend,
                            budget=self.args.budget, rules=not self.args.no_rules, max_tokens=self.args.max_tokens,
                            mode=self.args.mode)
            row.answer, row.rules, row.calls = result.text, result.rules_fired, len(result.calls)
            row.prompt_tokens, row.completion_tokens = result.prompt_tokens, result.completion_tokens
            judge = CachedBackend(self.judge_backend, self.args.cache_dir, self.stats, run=run,
                                  endpoint=self.judge_endpoint)
            prompt = judge_prompt(q, self.answers.get(q.id, ""), result.text)
            reply = judge.chat([{"role": "user", "content": prompt}], temperature=0.0,
                               max_tokens=self.args.judge_max_tokens)
            row.judge_reply, row.correct = reply.text, verdict(reply.text)
            row.judge_prompt_tokens, row.judge_completion_tokens = reply.prompt_tokens, reply.completion_tokens
        except MemstoreError as exc:
            row.error = str(exc)  # counted as wrong, and not cached: a rerun retries it
        row.seconds = time.perf_counter() - t0
        return row


def run_all(runner: Runner, qs: Sequence[lme.Question], runs: int, workers: int) -> list[Row]:
    from tqdm import tqdm

    tasks = [(q, r) for r in range(runs) for q in qs]
    rows: list[Row] = []
    with tqdm(total=len(tasks), desc="answering", unit="answer", file=sys.stderr, mininterval=1.0) as bar, \
            ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(runner.run_one, q, r) for q, r in tasks]
        for fut in as_completed(futures):
            rows.append(fut.result())
            bar.set_postfix_str(f"{runner.stats.made} calls, {runner.stats.cached} cached", refresh=False)
            bar.update(1)
    return sorted(rows, key=lambda r: (r.run, r.id))


# -- the report ---------------------------------------------------------------------------


def parse_prices(specs: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``model=in,out`` (USD per million input and output tokens) → {model: (in, out)}."""
    prices: dict[str, tuple[float, float]] = {}
    for spec in specs:
        try:
            name, rest = spec.rsplit("=", 1)
            p_in, p_out = (float(x) for x in rest.split(","))
        except ValueError:
            raise SystemExit(f"qa_longmemeval: --price {spec!r}: use MODEL=IN_PER_MTOK,OUT_PER_MTOK") from None
        prices[name] = (p_in, p_out)
    return prices


def cost(prices: dict[str, tuple[float, float]], model: str, tokens_in: int, tokens_out: int) -> float | None:
    if model not in prices:
        return None
    p_in, p_out = prices[model]
    return (tokens_in * p_in + tokens_out * p_out) / 1e6


def summarise(rows: list[Row], runs: int, answer_model: str, judge_model: str,
              prices: dict[str, tuple[float, float]]) -> dict[str, Any]:
    need = runs // 2 + 1  # a majority: 2 of 3
    by_q: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_q[r.id].append(r)
    run_acc = [statistics.mean(r.correct for r in rows if r.run == k) for k in range(runs)]

    def group(selected: dict[str, list[Row]]) -> dict[str, Any]:
        n = len(selected)
        per_run = [statistics.mean(r.correct for rs in selected.values() for r in rs if r.run == k)
                   for k in range(runs)] if n else []
        majority = sum(1 for rs in selected.values() if sum(r.correct for r in rs) >= need)
        return {"n": n, "mean": statistics.mean(per_run) if per_run else math.nan, "majority": majority}

    types = [t for t in lme.TYPES if any(r.type == t for r in rows)]
    per_type = {t: group({k: v for k, v in by_q.items() if v[0].type == t}) for t in types}
    abstention = group({k: v for k, v in by_q.items() if v[0].abstention})
    n_answers = len(rows)
    a_in = sum(r.prompt_tokens for r in rows)
    a_out = sum(r.completion_tokens for r in rows)
    j_in = sum(r.judge_prompt_tokens for r in rows)
    j_out = sum(r.judge_completion_tokens for r in rows)
    a_cost, j_cost = cost(prices, answer_model, a_in, a_out), cost(prices, judge_model, j_in, j_out)
    return {
        "questions": len(by_q),
        "runs": runs,
        "majority_needed": need,
        "run_accuracy": run_acc,
        "mean_accuracy": statistics.mean(run_acc) if run_acc else math.nan,
        "correct_in_majority": sum(1 for rs in by_q.values() if sum(r.correct for r in rs) >= need),
        "per_type": per_type,
        "abstention": abstention,
        "rules": dict(Counter(rule for r in rows for rule in r.rules)),
        "answers_with_second_read": sum(1 for r in rows if r.rules),
        "errors": sum(1 for r in rows if r.error),
        "tokens": {
            "answer": {"model": answer_model, "in": a_in, "out": a_out, "calls": sum(r.calls for r in rows),
                       "cost": a_cost},
            "judge": {"model": judge_model, "in": j_in, "out": j_out, "cost": j_cost},
            "per_answer": {"answer_in": a_in / max(n_answers, 1), "answer_out": a_out / max(n_answers, 1),
                           "answer_cost": None if a_cost is None else a_cost / max(n_answers, 1),
                           "judge_cost": None if j_cost is None else j_cost / max(n_answers, 1)},
        },
    }


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.2f}%"


def _usd(x: float | None, digits: int = 4) -> str:
    return "n/a (no --price)" if x is None else f"${x:,.{digits}f}"


def markdown(s: dict[str, Any], header: str) -> str:
    runs, need = s["runs"], s["majority_needed"]
    out = [header, ""]
    out.append(f"- mean accuracy over {runs} run{'s' if runs > 1 else ''}: **{_pct(s['mean_accuracy'])}** "
               f"(runs: {', '.join(_pct(a) for a in s['run_accuracy'])})")
    out.append(f"- questions correct in ≥{need} of {runs} runs: **{s['correct_in_majority']} / {s['questions']}**")
    out.append(f"- answers with a second read: {s['answers_with_second_read']}; rules fired: "
               + (", ".join(f"{k} {v}" for k, v in sorted(s["rules"].items())) or "none"))
    if s["errors"]:
        out.append(f"- answers that failed (counted wrong; rerun to retry): {s['errors']}")
    out += ["", "| type | questions | mean accuracy | correct in ≥%d of %d |" % (need, runs), "|---|---|---|---|"]
    rows = list(s["per_type"].items())
    if s["abstention"]["n"]:
        rows.append(("abstention (_abs)", s["abstention"]))
    for name, g in rows:
        out.append(f"| {name} | {g['n']} | {_pct(g['mean'])} | {g['majority']} |")
    out.append(f"| all | {s['questions']} | {_pct(s['mean_accuracy'])} | {s['correct_in_majority']} |")
    t = s["tokens"]
    pa = t["per_answer"]
    out += ["", "| tokens and cost | model | input tokens | output tokens | cost |", "|---|---|---|---|---|",
            f"| answering, total | {t['answer']['model']} | {t['answer']['in']:,} | {t['answer']['out']:,} | "
            f"{_usd(t['answer']['cost'], 2)} |",
            f"| answering, per answer | {t['answer']['model']} | {pa['answer_in']:,.0f} | {pa['answer_out']:,.0f} | "
            f"{_usd(pa['answer_cost'])} |",
            f"| judging, total | {t['judge']['model']} | {t['judge']['in']:,} | {t['judge']['out']:,} | "
            f"{_usd(t['judge']['cost'], 2)} |",
            f"| judging, per answer | {t['judge']['model']} | | | {_usd(pa['judge_cost'])} |"]
    return "\n".join(out)


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=S_FILE, help="A LongMemEval JSON file (.json, .gz, .xz).")
    ap.add_argument("--db", type=Path, default=None, help="Default: .cache/eval/lme_s.db (imported on first use).")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--per-type", type=int, help="N questions per type (fixed seed).")
    ap.add_argument("--questions", nargs="*", help="Question ids.")
    ap.add_argument("--types", nargs="*")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base-url", default=None, help="Answer endpoint [env MEMSTORE_ANSWER_BASE_URL].")
    ap.add_argument("--model-name", default=None, help="Answer model [env MEMSTORE_ANSWER_MODEL].")
    ap.add_argument("--judge-model", default=None, help="Default: the answer model.")
    ap.add_argument("--judge-base-url", default=None, help="Default: the answer endpoint.")
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="Memory bytes.")
    ap.add_argument("--mode", default="fused", choices=["bm25", "vector", "fused"])
    ap.add_argument("--embed-model", default=None, help="GGUF embedding model for the vector leg.")
    ap.add_argument("--no-rules", action="store_true", help="First read only.")
    ap.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    ap.add_argument("--judge-max-tokens", type=int, default=256, help="Room for a reasoning judge's yes or no.")
    ap.add_argument("--timeout", type=float, default=None, help="Seconds per call [env MEMSTORE_ANSWER_TIMEOUT].")
    ap.add_argument("--workers", type=int, default=4, help="Questions answered in parallel.")
    ap.add_argument("--price", action="append", default=[], metavar="MODEL=IN,OUT",
                    help="USD per million input and output tokens (repeatable).")
    ap.add_argument("--cache-dir", type=Path, default=CACHE / "qa")
    ap.add_argument("--out", type=Path, default=None, help="JSON report (default: in --cache-dir).")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    db = args.db = args.db or CACHE / "eval" / "lme_s.db"
    prices = parse_prices(args.price)
    try:
        answer_backend = OpenAIBackend(args.model_name, base_url=args.base_url, timeout=args.timeout)
        judge_key = os.environ.get(ENV_JUDGE_KEY) or os.environ.get(ENV_API_KEY)
        judge_backend = OpenAIBackend(args.judge_model or answer_backend.model,
                                      base_url=args.judge_base_url or answer_backend.base_url,
                                      api_key=judge_key, timeout=args.timeout)
    except MemstoreError as exc:
        print(f"qa_longmemeval: error: {exc}", file=sys.stderr)
        return 2
    questions = lme.load_questions(args.data, db.parent / f"{args.data.name}.questions.json")
    answers = load_answers(args.data, db.parent / f"{args.data.name}.answers.json")
    lme.open_eval_store(db, args.data, args.embed_model).close()
    with open_store(db, create=False) as store:
        present = {s.name for s in store.scopes()}
    qs = lme.select([q for q in questions if q.id in present], limit=args.limit, types=args.types,
                    ids=args.questions, per_type=args.per_type, seed=args.seed)
    if not qs:
        print("qa_longmemeval: error: no questions selected", file=sys.stderr)
        return 2

    stats = CallStats()
    runner = Runner(args, answer_backend, judge_backend, answers, stats)
    t0 = time.monotonic()
    try:
        rows = run_all(runner, qs, args.runs, args.workers)
    finally:
        runner.close()
        answer_backend.close()
        judge_backend.close()
    wall = time.monotonic() - t0
    summary = summarise(rows, args.runs, answer_backend.model, judge_backend.model, prices)
    summary["calls_made"], summary["calls_cached"], summary["seconds"] = stats.made, stats.cached, round(wall, 1)
    header = (f"# LongMemEval QA: {len(qs)} questions × {args.runs} runs\n\n"
              f"answer model: {answer_backend.model} at {safe_url(answer_backend.base_url)}; "
              f"judge: {judge_backend.model} at {safe_url(judge_backend.base_url)}; "
              f"budget {args.budget:,} bytes; rules {'off' if args.no_rules else 'on'}; mode {args.mode}")
    print(markdown(summary, header))
    print(f"\nmodel calls: {stats.made} made, {stats.cached} from the cache ({args.cache_dir}); {wall:.0f} s")
    out = args.out or args.cache_dir / f"qa-{answer_backend.model.replace('/', '_')}-{len(qs)}q-{args.runs}r.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report_args = {k: str(v) for k, v in vars(args).items()}
    out.write_text(json.dumps({"args": report_args, "summary": summary, "rows": [asdict(r) for r in rows]},
                              indent=1, ensure_ascii=False))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
