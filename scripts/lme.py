"""LongMemEval for the evaluation scripts: questions, evidence, metrics, the S×10 histories.

Kept apart from the scripts so that the metric functions and the S×10
construction have unit tests (tests/test_lme.py).
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)


@dataclass(frozen=True)
class Question:
    """One LongMemEval question and its evidence labels (which never enter the store)."""

    id: str
    type: str
    question: str
    date: str
    answer_sessions: tuple[str, ...]
    #: (session id, turn index) of every turn marked has_answer.
    evidence: tuple[tuple[str, int], ...]
    #: The user turns among them.
    user_evidence: tuple[tuple[str, int], ...]

    @property
    def abstention(self) -> bool:
        return self.id.endswith("_abs")

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "evidence": [list(e) for e in self.evidence],
                "user_evidence": [list(e) for e in self.user_evidence]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Question:
        return cls(
            id=d["id"], type=d["type"], question=d["question"], date=d["date"],
            answer_sessions=tuple(d["answer_sessions"]),
            evidence=tuple((s, t) for s, t in d["evidence"]),
            user_evidence=tuple((s, t) for s, t in d["user_evidence"]),
        )


def read_json(path: Path) -> Any:
    opener = lzma.open if path.name.endswith(".xz") else gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        return json.load(fh)


def question_of(q: dict[str, Any]) -> Question:
    evidence, user_evidence = [], []
    for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"]):
        for ti, t in enumerate(turns):
            if t.get("has_answer"):
                evidence.append((sid, ti))
                if t["role"] == "user":
                    user_evidence.append((sid, ti))
    return Question(
        id=q["question_id"],
        type=q["question_type"],
        question=q["question"],
        date=q["question_date"],
        answer_sessions=tuple(q.get("answer_session_ids", ())),
        evidence=tuple(dict.fromkeys(evidence)),
        user_evidence=tuple(dict.fromkeys(user_evidence)),
    )


def load_questions(data_path: Path, cache: Path) -> list[Question]:
    """The questions of a LongMemEval file, cached as a small JSON beside the eval database."""
    stamp = f"{data_path.resolve()}:{data_path.stat().st_size}:{data_path.stat().st_mtime_ns}"
    if cache.exists():
        blob = json.loads(cache.read_text())
        if blob.get("source") == stamp:
            return [Question.from_json(d) for d in blob["questions"]]
    questions = [question_of(q) for q in read_json(data_path)]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"source": stamp, "questions": [q.to_json() for q in questions]}))
    return questions


def select(
    questions: Sequence[Question],
    *,
    limit: int | None = None,
    types: Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    per_type: int | None = None,
    seed: int = 0,
) -> list[Question]:
    """A subset: by id, by type, a stratified sample of ``per_type`` per type (fixed seed), or the first ``limit``."""
    out = list(questions)
    if ids:
        wanted = set(ids)
        out = [q for q in out if q.id in wanted]
    if types:
        wanted_types = set(types)
        out = [q for q in out if q.type in wanted_types]
    if per_type:
        rng = random.Random(seed)
        picked: set[str] = set()
        for t in sorted({q.type for q in out}):
            of_type = sorted((q for q in out if q.type == t), key=lambda q: q.id)
            picked.update(q.id for q in rng.sample(of_type, min(per_type, len(of_type))))
        out = [q for q in out if q.id in picked]
    if limit:
        out = out[:limit]
    return out


def open_eval_store(db: Path, data: Path, model: str | None = None) -> Any:
    """The evaluation store, importing ``data`` the first time (atomic, so Ctrl-C leaves nothing half-done)."""
    import sys

    from memstore import open_store

    db.parent.mkdir(parents=True, exist_ok=True)
    store = open_store(db, model=model)
    if store.stats().scopes == 0:
        print(f"importing {data} into {db} …", file=sys.stderr)
        store.import_file(data)
    return store


# -- metrics ------------------------------------------------------------------


def first_appearance(ranked: Iterable[Any]) -> list[Any]:
    """De-duplicate a ranked list, keeping each element's first position (turns → sessions)."""
    return list(dict.fromkeys(ranked))


def recall_all(ranked: Sequence[Any], relevant: Iterable[Any], k: int) -> float:
    """1.0 when every relevant element is in the top ``k``, else 0.0."""
    rel = set(relevant)
    if not rel:
        raise ValueError("recall_all needs at least one relevant element")
    return 1.0 if rel <= set(ranked[:k]) else 0.0


def ndcg_any(ranked: Sequence[Any], relevant: Iterable[Any], k: int) -> float:
    """NDCG@k with binary gains: every relevant element counts as relevant."""
    rel = set(relevant)
    if not rel:
        raise ValueError("ndcg_any needs at least one relevant element")
    dcg = sum(1.0 / math.log2(i + 2) for i, x in enumerate(ranked[:k]) if x in rel)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal


# -- S×10 long histories ---------------------------------------------------------


def day_of(lme_date: str) -> str:
    """'2023/05/20 (Sat) 02:21' → '2023-05-20'."""
    return lme_date[:10].replace("/", "-")


def long_history(data: Sequence[dict[str, Any]], i: int, n: int = 10) -> dict[str, Any]:
    """Question ``i`` with the haystacks of questions i … i+n-1 (wrapping around) as its history.

    A session id seen twice is kept once (its first appearance, so the
    question's own haystack wins); sessions dated after the question's day
    are dropped; only question ``i``'s own evidence labels are kept.
    """
    q = data[i]
    qday = day_of(q["question_date"])
    ids, dates, sessions = [], [], []
    seen: set[str] = set()
    for j in range(n):
        other = data[(i + j) % len(data)]
        for sid, d, turns in zip(other["haystack_session_ids"], other["haystack_dates"], other["haystack_sessions"]):
            if sid in seen or day_of(d) > qday:
                continue
            seen.add(sid)
            ids.append(sid)
            dates.append(d)
            own = j == 0
            sessions.append([t if own else {k: v for k, v in t.items() if k != "has_answer"} for t in turns])
    return {**q, "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions}
