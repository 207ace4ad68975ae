"""Pseudo-relevance feedback: the expansion words, the moved query vector, the second pass."""

from __future__ import annotations

import math
from array import array
from pathlib import Path

import pytest

from memstore import open_store
from memstore import feedback as fb
from memstore.legs import Filters
from memstore.query import analyse
from memstore.retrieve import rank
from memstore.vectors import query_vector
from tests.conftest import run_cli


def test_expansion_words_are_the_most_shared_and_new_to_the_query() -> None:
    texts = [
        "The veterinary clinic booked a kitten checkup.",
        "Kitten vaccines at the veterinary clinic on Friday.",
        "The clinic parking lot was full.",
    ]
    terms = fb.expansion_terms(texts, analyse("kitten"), n=3, min_letters=3)
    # "clinic" is in all three, "veterinary" in two; "kitten" is the query's own.
    assert terms[:2] == ("clinic", "veterinary")
    assert "kitten" not in terms
    assert len(terms) == 3


def test_expansion_leaves_out_short_words() -> None:
    texts = ["The vet clinic, Friday.", "The vet clinic, Friday."]
    assert fb.expansion_terms(texts, analyse("kitten")) == ("clinic", "friday")
    assert fb.expansion_terms(texts, analyse("kitten"), min_letters=3) == ("vet", "clinic", "friday")


def test_expansion_ties_go_to_the_word_seen_first() -> None:
    a = fb.expansion_terms(["zebras apples", "zebras apples"], analyse("fruit"))
    b = fb.expansion_terms(["apples zebras", "apples zebras"], analyse("fruit"))
    assert a == ("zebras", "apples") and b == ("apples", "zebras")


def test_expansion_skips_texts_without_words() -> None:
    assert fb.expansion_terms(["?!", "...", "teapot"], analyse("coffee")) == ("teapot",)
    assert fb.expansion_terms([], analyse("coffee")) == ()


def _unit(values: list[float]) -> bytes:
    n = math.sqrt(sum(v * v for v in values))
    return array("f", [v / n for v in values]).tobytes()


def _cos(a: bytes, b: bytes) -> float:
    x, y = array("f", a), array("f", b)
    return sum(p * q for p, q in zip(x, y)) / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))


@pytest.fixture
def vstore(db_path: Path, minilm_path: Path):
    store = open_store(db_path, model=str(minilm_path))
    turns = [{"role": "user", "content": f"Note {n}: the {w} report is filed."} for n, w in enumerate(
        "alpha beta gamma delta epsilon zeta theta iota kappa lambda omicron sigma tau upsilon phi chi psi omega "
        "amber azure coral ivory jade olive pearl ruby sable teal umber violet".split())]
    turns += [
        {"role": "user", "content": "My kitten has a veterinary clinic appointment for vaccines."},
        {"role": "user", "content": "The kitten hid before the veterinary clinic appointment."},
        {"role": "user", "content": "Booked the kitten a veterinary clinic appointment next week."},
        {"role": "user", "content": "Rescheduled the veterinary clinic appointment to Monday."},
    ]
    store.add_session("home", "s1", "2024-05-01T10:00", turns)
    store.embed()
    yield store
    store.close()


def test_feedback_vector_is_a_unit_vector_moved_towards_the_items(vstore) -> None:
    conn = vstore.conn
    ids = [r[0] for r in conn.execute("SELECT id FROM items WHERE content LIKE '%kitten%' ORDER BY id")]
    q = query_vector(conn, vstore.embedder(required=True), "quarterly paperwork")
    moved = fb.feedback_vector(conn, q, ids)
    assert moved is not None
    assert math.isclose(math.sqrt(sum(v * v for v in array("f", moved))), 1.0, rel_tol=1e-5)
    item = conn.execute("SELECT embedding FROM items_vec WHERE item_id = ?", (ids[0],)).fetchone()[0]
    assert _cos(moved, item) > _cos(q, item)
    assert fb.feedback_vector(conn, q, []) is None
    assert fb.feedback_vector(conn, q, [10**9]) is None  # no such vector


def test_search_results_tell_what_the_feedback_used(vstore) -> None:
    hits = vstore.search("kitten", scope="home", k=5, latest_slots=0)
    first_pass = vstore.search("kitten", scope="home", k=3, latest_slots=0, feedback=False)
    assert hits.feedback_from == [h.item.ref for h in first_pass]
    assert "clinic" in hits.feedback_words
    assert vstore.search("kitten", scope="home", feedback=False).feedback_json() is None


def test_second_pass_finds_an_item_that_only_shares_the_feedback_words(vstore) -> None:
    f = Filters(scope_id=vstore.scope_id("home"))
    target = vstore.conn.execute("SELECT id FROM items WHERE content LIKE 'Rescheduled%'").fetchone()[0]
    one = rank(vstore, "kitten", f, feedback=False)
    two = rank(vstore, "kitten", f)
    assert one.feedback is None
    assert target not in one.legs["bm25"]  # it never says "kitten"
    assert two.feedback is not None
    assert two.feedback.items == tuple(x.id for x in one.fused[:3])
    assert {"veterinary", "clinic", "appointment"} <= set(two.feedback.terms[:4])
    assert target in two.legs["bm25"]
    # The explain trace reports the second pass, and still sums to the score.
    hit = next(x for x in two.fused if x.id == target)
    assert hit.legs["bm25"].rank == two.legs["bm25"].index(target) + 1
    assert math.isclose(sum(lr.contribution for lr in hit.legs.values()), hit.score)


def test_conjunctive_keeps_the_bm25_query_and_moves_only_the_vector(vstore) -> None:
    f = Filters(scope_id=vstore.scope_id("home"))
    r = rank(vstore, "kitten", f, conjunctive=True)
    assert r.feedback is not None and r.feedback.terms == ()
    assert len(r.legs["bm25"]) == 3


def test_no_second_pass_over_a_small_pool(db_path: Path, minilm_path: Path) -> None:
    store = open_store(db_path, model=str(minilm_path))
    store.add_session("home", "s1", "2024-05-01T10:00", [
        {"role": "user", "content": "My kitten chews cables."},
        {"role": "user", "content": "The vet visit went well."},
    ])
    store.embed()
    r = rank(store, "kitten", Filters(scope_id=store.scope_id("home")))
    assert r.feedback is None and len(r.fused) < fb.FEEDBACK_MIN_POOL
    store.close()


def test_bm25_mode_has_no_second_pass(vstore) -> None:
    r = rank(vstore, "kitten", Filters(scope_id=vstore.scope_id("home")), mode="bm25")
    assert r.feedback is None and len(r.legs["bm25"]) == 3


def test_cli_no_feedback_flag(vstore, db_path: Path, minilm_path: Path) -> None:
    vstore.close()
    args = ("search", "kitten", "--scope", "home", "--db", str(db_path), "--model", str(minilm_path),
            "--latest-slots", "0", "-k", "40", "--explain", "--json")

    def rescheduled(out: dict) -> dict:
        return next(h for h in out["hits"] if h["content"].startswith("Rescheduled"))

    # The item that never says "kitten" is a BM25 match only in the second pass.
    two, one = run_cli(*args).json(), run_cli(*args, "--no-feedback").json()
    assert "bm25" in rescheduled(two)["legs"]
    assert "bm25" not in rescheduled(one)["legs"]
    assert one["feedback"] is None
    assert len(two["feedback"]["from"]) == fb.FEEDBACK_DOCS
    assert all(set(ref) == {"session", "turn"} for ref in two["feedback"]["from"])
    assert {"veterinary", "clinic", "appointment"} <= set(two["feedback"]["words"])
    text = run_cli(*args[:-1]).out
    assert "feedback: second pass from s1#" in text and "clinic" in text.splitlines()[0]
