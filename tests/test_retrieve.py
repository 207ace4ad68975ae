"""Fused retrieval: the legs, weighted RRF, as-of, latest-dated slots, explain, bad input."""

from __future__ import annotations

import pytest

from memstore import NotFoundError, SearchOptions, UsageError, Weights
from memstore.dates import as_of_bound
from memstore.errors import DateFormatError
from memstore.fuse import RRF_K, rrf
from memstore.legs import Filters, bm25, latest, tags
from memstore.query import MAX_TERMS, analyse, fts_match
from memstore.records import MAX_CHARS, build_records


def test_rrf_formula_ranks_from_one_and_contributions_sum() -> None:
    fused = rrf({"bm25": [10, 20, 30], "vector": [30, 10], "tags": [40]}, {"bm25": 1.0, "vector": 4.0, "tags": 1.0})
    by_id = {f.id: f for f in fused}
    assert by_id[10].legs["bm25"].rank == 1
    assert by_id[10].legs["bm25"].contribution == pytest.approx(1.0 / (RRF_K + 1))
    assert by_id[10].legs["vector"].contribution == pytest.approx(4.0 / (RRF_K + 2))
    for f in fused:
        assert f.score == pytest.approx(sum(lr.contribution for lr in f.legs.values()))
    assert [f.id for f in fused] == [30, 10, 40, 20]  # 40: 1/61 (tags #1) beats 20: 1/62 (bm25 #2)


def test_rrf_ignores_zero_weight_and_breaks_ties_deterministically() -> None:
    fused = rrf({"a": [1, 2], "b": [2, 1], "c": [9]}, {"a": 1.0, "b": 1.0, "c": 0.0})
    assert [f.id for f in fused] == [1, 2]  # equal scores: the better best-rank, then id
    assert all("c" not in f.legs for f in fused)
    assert rrf({"a": [5, 5, 6]}, {"a": 1.0})[1].legs["a"].rank == 3  # duplicates keep their first rank


def test_query_analysis_quotes_everything() -> None:
    t = analyse('What did "NEAR(kitten* -vet) AND title:x" say? by:Alice #Budget')
    assert t.words == ("near", "kitten", "vet", "title", "x", "say", "alice", "budget")
    assert t.authors == ("alice",) and "budget" in t.tags
    match = fts_match(t.words, 7)
    assert match.startswith('scope_id : "7" AND content : (') and '"kitten" OR "vet"' in match
    assert analyse("what is it").words == ("what", "is", "it")  # only stopwords: keep them
    with pytest.raises(UsageError, match="empty"):
        analyse("   ")
    with pytest.raises(UsageError, match="only punctuation"):
        analyse("?!…—")
    assert len(analyse(" ".join(f"w{i}" for i in range(20_000))).words) == MAX_TERMS


@pytest.fixture
def org(store):
    """A small organisational memory: decisions by several authors, revised over time."""
    docs = [
        ("d1", "2024-01-10T09:00", "alice", ["decision", "database"], "We will use PostgreSQL for the memory service."),
        ("d2", "2024-02-01T09:00", "bob", ["budget"], "The cloud budget for Q1 is 10k euros."),
        ("d3", "2024-03-05T09:00", "carol", ["decision", "database"], "Revised: the memory service moves to SQLite."),
        ("d4", "2024-03-20T09:00", "bob", ["budget"], "Q2 cloud budget raised to 15k euros."),
        ("d5", "2024-04-02T09:00", "dave", [], "Lunch menu: pasta on Fridays."),
        ("d6", "2024-04-03T18:00", "erin", ["hiring"], "We hired two engineers for the memory team."),
    ]
    for key, at, author, tag_list, text in docs:
        store.add_session("org", key, at, [{"role": "document", "content": text, "author": author, "tags": tag_list}])
    store.add_session("org", "chat", "2024-04-03T12:00", [
        {"role": "user", "content": "Which database does the memory service use?"},
        {"role": "assistant", "content": "The memory service uses SQLite since March."},
    ])
    return store


def keys(hits) -> list[str]:
    return [h.item.session for h in hits]


def test_bm25_disjunctive_and_conjunctive(org) -> None:
    f = Filters(org.scope_id("org"))
    any_terms = bm25(org.conn, analyse("memory budget"), f, 50)
    all_terms = bm25(org.conn, analyse("memory service SQLite"), f, 50, conjunctive=True)
    items = org.items_by_id(any_terms + all_terms)
    assert {items[i].session for i in any_terms} >= {"d1", "d2", "d3", "d4", "d6"}
    assert {items[i].session for i in all_terms} == {"d3", "chat"}


def test_filters_by_role_and_dates_inside_the_leg(org) -> None:
    sid = org.scope_id("org")
    only_docs = bm25(org.conn, analyse("memory service"), Filters(sid, roles=("document",)), 50)
    assert {org.items_by_id(only_docs)[i].role for i in only_docs} == {"document"}
    before = bm25(org.conn, analyse("memory service"), Filters(sid, as_of=as_of_bound("2024-03-05")), 50)
    assert {org.items_by_id(before)[i].session for i in before} == {"d1", "d3"}  # the whole day counts
    after = bm25(org.conn, analyse("memory service"), Filters(sid, after=as_of_bound("2024-03-05")), 50)
    assert {org.items_by_id(after)[i].session for i in after} == {"d6", "chat"}
    window = bm25(org.conn, analyse("memory"), Filters(sid, as_of="2024-04-03T12:00:00", after="2024-01-10T09:00:00"), 50)
    assert {org.items_by_id(window)[i].session for i in window} == {"d3", "chat"}


def test_tag_leg_matches_tags_and_authors(org) -> None:
    sid = org.scope_id("org")
    by_tag = tags(org.conn, analyse("database decision"), Filters(sid), 50)
    assert [org.items_by_id(by_tag)[i].session for i in by_tag] == ["d3", "d1"]  # two tags each; newest first
    by_author = tags(org.conn, analyse("by:Bob"), Filters(sid), 50)
    assert [org.items_by_id(by_author)[i].session for i in by_author] == ["d4", "d2"]
    assert tags(org.conn, analyse("lunch"), Filters(sid), 50) == []


def test_search_explain_trace(org) -> None:
    # "database" is in the chat's text only; both decisions carry the tags.
    hits = org.search("database decision", scope="org", mode="bm25", k=3, latest_slots=0)
    assert keys(hits) == ["d3", "chat", "d1"]  # d3 and chat tie at 1/61; the lower id goes first
    assert {leg: lr.rank for leg, lr in hits[0].legs.items()} == {"tags": 1}
    assert {leg: lr.rank for leg, lr in hits[1].legs.items()} == {"bm25": 1}
    assert {leg: lr.rank for leg, lr in hits[2].legs.items()} == {"tags": 2}
    for h in hits:
        assert h.score == pytest.approx(sum(lr.contribution for lr in h.legs.values()))
    assert hits[2].to_json(explain=True)["legs"]["tags"] == {"rank": 2, "contribution": pytest.approx(1 / 62)}


def test_latest_dated_slots_keep_the_revision(org) -> None:
    # By rank the old decision wins; the latest slot brings the newest matching item in.
    hits = org.search("PostgreSQL memory service", scope="org", mode="bm25", k=2, latest_slots=1, weights=Weights(1, 0, 0))
    assert keys(hits) == ["d1", "d6"]
    assert [h.slot for h in hits] == ["rank", "latest"]
    # as of early March, the latest matching item is the revision itself
    hits = org.search("PostgreSQL memory service", scope="org", mode="bm25", k=2, latest_slots=1,
                      as_of="2024-03-05", weights=Weights(1, 0, 0))
    assert keys(hits) == ["d1", "d3"]


def test_latest_slots_fill_from_the_scope_when_few_match(org) -> None:
    hits = org.search("pasta", scope="org", mode="bm25", k=4, latest_slots=3)
    assert keys(hits) == ["d5", "d6", "chat", "chat"]
    assert [h.slot for h in hits] == ["rank", "latest", "latest", "latest"]
    assert hits[1].legs == {} and hits[1].score == 0.0
    one = org.search("pasta", scope="org", mode="bm25", k=1, latest_slots=3)
    assert keys(one) == ["d5"]  # at least one slot always goes by rank


def test_bad_search_input(org) -> None:
    with pytest.raises(UsageError, match="empty"):
        org.search("", scope="org")
    with pytest.raises(UsageError, match="only punctuation"):
        org.search("?? !!", scope="org")
    assert org.search("what was it", scope="org", mode="bm25") is not None  # stopwords only: still searches
    with pytest.raises(NotFoundError, match="scopes: org"):
        org.search("x", scope="nobody")
    for k in (0, -1):
        with pytest.raises(UsageError, match="k must be at least 1"):
            org.search("memory", scope="org", k=k)
    with pytest.raises(DateFormatError, match="not a date"):
        org.search("memory", scope="org", as_of="next tuesday")
    with pytest.raises(UsageError, match="negative"):
        org.search("memory", scope="org", weights=Weights(-1, 1, 1))
    with pytest.raises(UsageError, match="above zero"):
        org.search("memory", scope="org", weights=Weights(0, 0, 0))
    with pytest.raises(UsageError, match="role"):
        org.search("memory", scope="org", roles=("robot",))
    huge = ("memory service budget " * 5000)[:100_000]
    assert keys(org.search(huge, scope="org", mode="bm25", k=3, latest_slots=0))
    for q in ['"unbalanced', "NEAR(a b)", "a* -b", "col:umn", "(((", "AND OR NOT", '"" ""', "^x"]:
        org.search(q + " memory", scope="org", mode="bm25")


def test_fused_without_vectors_says_bm25_once(org) -> None:
    org.search("memory", scope="org")
    org.search("budget", scope="org")
    assert org.notices == ["the store has no embeddings, so retrieval runs BM25 only (run `memstore embed`)"]


def test_record_view_cuts_and_keeps_versions_side_by_side(org) -> None:
    view = build_records(org, "memory service database", scope="org", k=5)
    dates = [h.item.at for h in view.hits]
    assert dates == sorted(dates)
    assert "PostgreSQL" in view.text and "SQLite" in view.text  # old and new decision both shown
    assert "[2024-01-10 09:00 · document · by alice · session d1, turn 0 · tags database, decision]" in view.text
    assert len(view.text) <= MAX_CHARS and not view.cut
    org.add_session("org", "long", "2024-04-04", [{"role": "document", "content": "memory " * 20_000}])
    view = build_records(org, "memory service database", scope="org", k=10)
    assert len(view.text) <= MAX_CHARS and view.cut
    assert "[… cut]" in view.text
    as_of = build_records(org, "memory service database", scope="org", as_of="2024-02-01")
    assert {h.item.session for h in as_of.hits} <= {"d1", "d2"}


def test_search_options_defaults() -> None:
    opts = SearchOptions()
    assert opts.k == 10 and opts.latest_slots == 3 and opts.mode == "fused"
