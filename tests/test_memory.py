"""The memory text, the whole-session view and the baseline memory."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from memstore import ItemRef, UsageError
from memstore.errors import DateFormatError
from memstore.memory import CUT_MARK, build_baseline
from tests.conftest import run_cli

QUESTION_DATE = "2024-05-01T18:00"


def utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def test_structure_of_the_demo_memory(demo_store) -> None:
    m = demo_store.memory("Where do I live now?", scope="demo", date=QUESTION_DATE, mode="bm25")
    text = m.text
    assert text.startswith("# Memory for a question asked on 2024-05-01 (Wed) 18:00\n")
    assert "every session is dated" not in text
    users = [i for i in demo_store.items("demo", roles=["user"])]
    log = text.split("## The user's messages\n", 1)[1].split("## Assistant replies", 1)[0]
    positions = [log.index(f"- {u.content}\n") for u in users]  # every user message, verbatim
    assert positions == sorted(positions)  # in date order
    assert "### 2024-03-02 (Sat) 09:15, 60 days (about 2 months) before the question\n" in log
    assert "### 2024-04-28 (Sun) 10:00, 3 days before the question\n" in log
    # relative dates resolved from the session's date, on the line after the message
    assert ('- We moved into a flat in Chorlton three days ago. Pixel hid under the bed for a day but she\'s '
            'exploring now.\n  [dates: "three days ago" = 2024-04-25 (Thu)]\n') in log
    replies = text.split("## Assistant replies most relevant to the question\n", 1)[1]
    assert "### 2024-04-02 (Tue) 20:30, 29 days (about 4 weeks) before the question" in replies
    for u in users:
        assert u.content not in replies  # user turns are dropped from the replies
    assert m.bytes == utf8(text) <= 180_000
    assert sum(s.bytes for s in m.sections.values()) == m.bytes
    log_refs = {e.ref for e in m.sections["user_log"].items}
    assert log_refs == {u.ref for u in users}
    reply_refs = {e.ref for e in m.sections["replies"].items}
    assert reply_refs and all(demo_store.session("demo", r.session).items[r.turn].role == "assistant"
                              for r in reply_refs)
    assert m.to_json()["manifest"]["user_log"]["items"][0] == {"session": "2024-03-02-kitten", "turn": 0}


def test_same_day_history_is_flagged(store) -> None:
    for n in range(3):
        store.add_session("s", f"k{n}", "2023-05-20T10:00",
                          [{"role": "user", "content": f"message {n} about gardening"}])
    m = store.memory("gardening?", scope="s", date="2023-05-30", mode="bm25")
    assert "every session is dated 2023-05-20 (Sat), so session dates say nothing" in m.text
    store.add_session("s", "k9", "2023-05-21T10:00", [{"role": "user", "content": "more gardening"}])
    assert "say nothing" not in store.memory("gardening?", scope="s", date="2023-05-30", mode="bm25").text


def test_deterministic(demo_store) -> None:
    a = demo_store.memory("Lisbon trip budget", scope="demo", date=QUESTION_DATE, budget=2500, mode="bm25")
    b = demo_store.memory("Lisbon trip budget", scope="demo", date=QUESTION_DATE, budget=2500, mode="bm25")
    assert a.text == b.text and a.to_json() == b.to_json()


def test_question_day_counts_whole_and_later_sessions_are_left_out(demo_store) -> None:
    early = demo_store.memory("kitten", scope="demo", date="2024-03-20T08:00", mode="bm25")
    assert "Took Pixel to the vet" in early.text  # dated 12:05 the same day: the whole day counts
    assert "Northwind" not in early.text


@pytest.fixture
def long_store(store):
    """A history whose user log is about 150 KB: 60 sessions of 5 messages of ~500 bytes."""
    rng = random.Random(7)
    words = ("garden tomato river bicycle lamp window coffee ticket violin marble pencil cloud harbor "
             "tunnel meadow kettle puzzle lantern").split()
    for s in range(60):
        day = f"2023-{1 + s // 28:02d}-{1 + s % 28:02d}T09:00"
        turns = []
        for t in range(5):
            text = " ".join(rng.choice(words) for _ in range(80))
            turns.append({"role": "user", "content": f"Session {s} note {t}: {text}"})
            turns.append({"role": "assistant", "content": f"Reply {s}.{t}: " + " ".join(rng.choice(words) for _ in range(60))})
        if s == 17:
            turns[4] = {"role": "user", "content": "By the way, my sister's wedding is in Porto and I will wear a blue suit."}
        if s == 41:
            turns[3] = {"role": "assistant", "content": "I recommended the Hotel Aurelia near the old harbour for your stay."}
        store.add_session("long", f"s{s:02d}", day, turns)
    return store


@pytest.mark.parametrize("budget", [8_000, 16_000, 32_000, 180_000])
def test_any_budget_keeps_what_matters(long_store, budget: int) -> None:
    m = long_store.memory("What will I wear to my sister's wedding in Porto?", scope="long", date="2023-04-01",
                          budget=budget, mode="bm25")
    assert m.bytes <= budget
    assert ItemRef("s17", 4) in m.refs()
    assert "my sister's wedding is in Porto" in m.text
    log = m.sections["user_log"]
    n_users = len(long_store.items("long", roles=["user"]))
    if budget < 150_000:
        assert log.sessions, "omitted sessions are named in the manifest"
        assert "not shown" in m.text
    complete = len(log.items) == n_users
    intro = m.text.split("\n", 2)[1]
    assert ("every message the user wrote" in intro) == complete
    assert ("(what is left out is marked)" in intro) == (not complete)


def test_recall_questions_reach_the_assistant_reply(long_store) -> None:
    m = long_store.memory("Which hotel did you recommend for my stay near the harbour?", scope="long",
                          date="2023-04-01", budget=8_000, mode="bm25")
    assert ItemRef("s41", 3) in m.refs()
    assert m.bytes <= 8_000


def test_stubs_for_omitted_sessions(long_store) -> None:
    m = long_store.memory("sister's wedding Porto", scope="long", date="2023-04-01", budget=100_000, mode="bm25")
    stub_block = m.text.split(" not shown (date and first words)\n", 1)[1].split("\n## ", 1)[0]
    stubs = stub_block.strip().splitlines()
    assert len(stubs) == len(m.sections["user_log"].sessions)
    assert re.fullmatch(r"- 2023-\d\d-\d\d \(\w{3}\): Session \d+ note 0: .+…", stubs[0])
    tiny = long_store.memory("sister's wedding Porto", scope="long", date="2023-04-01", budget=8_000, mode="bm25")
    assert re.search(r"## \d+ sessions (not shown|between)", tiny.text)  # runs instead of stubs when they do not fit


def test_skipped_messages_in_a_shown_session_are_marked(long_store) -> None:
    m = long_store.memory("sister's wedding Porto", scope="long", date="2023-04-01", budget=16_000, mode="bm25")
    block = m.text.split("### 2023-01-18 (Wed) 09:00", 1)[1].split("###", 1)[0]
    assert ("  [… 2 messages not shown]\n- By the way, my sister's wedding is in Porto and I will wear a blue"
            " suit.\n") in block
    assert re.search(r"  \[… \d messages? not shown\]\n$", block)


def test_a_long_message_is_cut_with_a_mark(store) -> None:
    store.add_session("s", "a", "2024-01-01", [{"role": "user", "content": "zebra " + "x" * 30_000}])
    store.add_session("s", "b", "2024-01-02", [{"role": "user", "content": "zebra crossing " * 10}])
    m = store.memory("zebra", scope="s", date="2024-01-03", budget=8_000, mode="bm25")
    assert m.bytes <= 8_000
    assert re.search(r"\[… cut: [\d,]+ more bytes\]", m.text)
    partial = [e for e in m.sections["user_log"].items if e.partial]
    assert [e.ref for e in partial] == [ItemRef("a", 0)]
    assert ItemRef("a", 0) not in m.refs(whole=True) and ItemRef("a", 0) in m.refs(whole=False)


def test_dates_in_the_question_pick_sessions(long_store) -> None:
    m = long_store.memory("What did I write on February 3rd?", scope="long", date="2023-04-01", budget=8_000,
                          mode="bm25")
    assert any(e.ref.session == "s30" for e in m.sections["user_log"].items)  # s30 is dated 2023-02-03


def test_reply_budget_is_respected(long_store) -> None:
    m = long_store.memory("garden tomato", scope="long", date="2023-04-01", budget=180_000, reply_budget=5_000,
                          mode="bm25")
    assert m.sections["replies"].bytes <= 5_000
    assert m.sections["replies"].items


def test_bad_memory_input(demo_store, store) -> None:
    before = demo_store.memory("kitten", scope="demo", date="2020-01-01", mode="bm25")
    assert "(none)" in before.text and not before.sections["replies"].items
    store.add_session("quiet", "a", "2024-01-01", [{"role": "assistant", "content": "Hello, how can I help?"}])
    quiet = store.memory("help", scope="quiet", date="2024-02-01", mode="bm25")
    assert "(none)" in quiet.text and quiet.sections["replies"].items
    with pytest.raises(UsageError, match="smaller than the memory's header"):
        demo_store.memory("kitten", scope="demo", date=QUESTION_DATE, budget=100, mode="bm25")
    with pytest.raises(UsageError, match="question is empty"):
        demo_store.memory("  ", scope="demo", date=QUESTION_DATE)
    with pytest.raises(DateFormatError, match="not a date"):
        demo_store.memory("kitten", scope="demo", date="the first of May")


def test_sessions_view(long_store) -> None:
    long_store.add_session("long", "big", "2023-02-10T12:00", [
        {"role": "user", "content": "porto wedding speech draft: " + "words " * 4000},
        {"role": "assistant", "content": "ok"},
    ])
    v = long_store.sessions_view("What about my sister's wedding in Porto on February 10?", scope="long",
                                 date="2023-04-01")
    assert v.bytes <= 100_000
    started = {s.key: s.started_at for s in long_store.sessions("long")}
    shown = [started[k] for k in v.sessions]
    assert shown == sorted(shown)  # shown oldest first
    assert "big" in v.sessions and "s17" in v.sessions
    assert "user: porto wedding speech draft" in v.text and "assistant: ok" in v.text
    assert CUT_MARK.split("{")[0] in v.text  # the 24,000-character message is cut at 12,000
    cut = [e for e in v.items if e.partial]
    assert [e.ref for e in cut] == [ItemRef("big", 0)]
    small = long_store.sessions_view("sister wedding Porto", scope="long", date="2023-04-01", budget=5_000)
    assert small.sessions == ("s17",)  # content words choose it first


def test_baseline_memory(long_store) -> None:
    b = build_baseline(long_store, "garden tomato river", scope="long", date="2023-04-01", mode="bm25")
    assert b.bytes <= 96_000
    assert 0 < len(b.sections["turns"].items) <= 100


def test_memory_cli(tmp_path: Path) -> None:
    from tests.conftest import DEMO

    db = tmp_path / "d.db"
    assert run_cli("import", str(DEMO), "--db", str(db)).code == 0
    r = run_cli("memory", "Where do I live now?", "--scope", "demo", "--date", "2024-05-01", "--db", str(db),
                "--json", "--budget", "4000")
    assert r.code == 0, r.err
    data = r.json()
    assert data["bytes"] <= 4000 and data["manifest"]["user_log"]["items"]
    assert data["notices"]
    view = run_cli("sessions-view", "Lisbon", "--scope", "demo", "--date", "2024-05-01", "--db", str(db))
    assert view.code == 0 and "Lisbon" in view.out
    base = run_cli("baseline", "Lisbon", "--scope", "demo", "--db", str(db), "--json")
    assert base.code == 0 and base.json()["manifest"]["turns"]["items"]
    bad = run_cli("memory", "x", "--scope", "demo", "--date", "soon", "--db", str(db))
    assert bad.code == 1 and bad.err.startswith("memstore: error: 'soon' is not a date")


def test_never_over_budget(long_store) -> None:
    questions = ["garden tomato", "What did you recommend near the harbour?", "sister's wedding on 2023-01-18",
                 "lamp", "How many times did I mention violin last month?"]
    for budget in range(3_000, 70_000, 6_100):
        for q in questions:
            m = long_store.memory(q, scope="long", date="2023-04-01", budget=budget, mode="bm25")
            assert m.bytes <= budget, (budget, q, m.bytes)
            assert m.sections["replies"].bytes <= 96_000


def test_long_replies_never_overrun_the_budget(store) -> None:
    for n in range(12):
        store.add_session("r", f"s{n}", f"2024-01-{n + 1:02d}", [
            {"role": "user", "content": f"question {n} about the garden"},
            {"role": "assistant", "content": f"garden advice {n}: " + "water the tomatoes daily. " * (150 + 40 * n)},
        ])
    for budget in (2_000, 5_000, 8_000, 16_000, 40_000):
        for q in ("What did you recommend for the garden?", "garden"):
            m = store.memory(q, scope="r", date="2024-02-01", budget=budget, mode="bm25")
            assert m.bytes <= budget, (budget, q, m.bytes)
            cut = [e for e in m.sections["replies"].items if e.partial]
            assert len(cut) <= 1
