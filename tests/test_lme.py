"""The evaluation's metric functions and the S×10 construction (scripts/lme.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import lme  # noqa: E402


def test_recall_all() -> None:
    ranked = ["a", "b", "c", "d"]
    assert lme.recall_all(ranked, {"a", "c"}, 3) == 1.0
    assert lme.recall_all(ranked, {"a", "d"}, 3) == 0.0
    assert lme.recall_all(ranked, {"d"}, 10) == 1.0
    assert lme.recall_all(ranked, {"z"}, 10) == 0.0
    with pytest.raises(ValueError):
        lme.recall_all(ranked, set(), 5)


def test_ndcg_any() -> None:
    assert lme.ndcg_any(["a", "b", "c"], {"a"}, 5) == 1.0
    assert lme.ndcg_any(["x", "a"], {"a"}, 5) == pytest.approx(1 / math.log2(3))
    # two relevant at ranks 1 and 3, ideal at ranks 1 and 2
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert lme.ndcg_any(["a", "x", "b"], {"a", "b"}, 5) == pytest.approx(expected)
    assert lme.ndcg_any(["x", "y", "a"], {"a"}, 2) == 0.0
    # more relevant than k: the ideal has k gains
    assert lme.ndcg_any(["a", "b"], {"a", "b", "c"}, 2) == 1.0


def test_turns_become_sessions_by_first_appearance() -> None:
    turns = [("s2", 0), ("s1", 3), ("s2", 5), ("s3", 1), ("s1", 0)]
    assert lme.first_appearance(s for s, _ in turns) == ["s2", "s1", "s3"]


def haystack(qid: str, date: str, sessions: list[tuple[str, str]], evidence: str | None = None) -> dict:
    return {
        "question_id": qid, "question_type": "multi-session", "question": "q?", "question_date": date,
        "answer": "a", "answer_session_ids": [evidence] if evidence else [],
        "haystack_session_ids": [s for s, _ in sessions],
        "haystack_dates": [d for _, d in sessions],
        "haystack_sessions": [[{"role": "user", "content": f"{s} text", "has_answer": s == evidence}]
                              for s, _ in sessions],
    }


def test_long_history_construction() -> None:
    data = [
        haystack("q0", "2023/05/10 (Wed) 10:00", [("a", "2023/05/01 (Mon) 09:00"), ("b", "2023/05/02 (Tue) 09:00")], "a"),
        haystack("q1", "2023/05/20 (Sat) 10:00", [("b", "2023/05/03 (Wed) 09:00"), ("c", "2023/05/10 (Wed) 23:59"),
                                                  ("d", "2023/05/11 (Thu) 00:01")], "c"),
        haystack("q2", "2023/06/01 (Thu) 10:00", [("e", "2023/05/05 (Fri) 09:00")], "e"),
    ]
    h = lme.long_history(data, 0, n=3)
    # own sessions first; "b" from q1 is a duplicate; "d" is after q0's day; "c" at 23:59 on the day is kept
    assert h["haystack_session_ids"] == ["a", "b", "c", "e"]
    assert h["haystack_dates"][1] == "2023/05/02 (Tue) 09:00"
    labels = [t.get("has_answer") for s in h["haystack_sessions"] for t in s]
    assert labels == [True, False, None, None]  # only q0's own labels survive
    wrapped = lme.long_history(data, 2, n=2)  # q2 then q0 (wrapping around)
    assert wrapped["haystack_session_ids"] == ["e", "a", "b"]
    assert lme.question_of(h).evidence == (("a", 0),)


def test_stratified_subset_is_fixed() -> None:
    qs = [lme.Question(f"{t}-{i}", t, "q", "2023/01/01", (), (), ()) for t in lme.TYPES for i in range(20)]
    a = lme.select(qs, per_type=3, seed=0)
    b = lme.select(list(reversed(qs)), per_type=3, seed=0)
    assert len(a) == 18 and {q.id for q in a} == {q.id for q in b}
    assert lme.select(qs, types=["knowledge-update"], limit=4) == [q for q in qs if q.type == "knowledge-update"][:4]
