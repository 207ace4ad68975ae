"""Tests for memstore.dates: strict parsing, formatting and relative dates."""

from __future__ import annotations

import random
from datetime import date, datetime

import pytest

from memstore import dates
from memstore.dates import (
    DateRef,
    after_bound,
    as_of_bound,
    date_note,
    describe_distance,
    format_day,
    parse_datetime,
    parse_iso,
    question_ranges,
    resolve_relative,
    to_iso,
)
from memstore.errors import DateFormatError, InputError

MON = date(2023, 5, 15)
WED = date(2023, 5, 17)
SAT = date(2023, 5, 20)
SUN = date(2023, 5, 21)


def D(s: str) -> date:
    return date.fromisoformat(s)


# --------------------------------------------------------------------------
# resolve_relative: (text, anchor, expected describe() strings)
# --------------------------------------------------------------------------

RELATIVE_CASES = [
    # single days, Wednesday anchor
    ("today", WED, ['"today" = 2023-05-17 (Wed)']),
    ("tonight", WED, ['"tonight" = 2023-05-17 (Wed)']),
    ("this morning", WED, ['"this morning" = 2023-05-17 (Wed)']),
    ("this afternoon", WED, ['"this afternoon" = 2023-05-17 (Wed)']),
    ("this evening", WED, ['"this evening" = 2023-05-17 (Wed)']),
    ("yesterday", WED, ['"yesterday" = 2023-05-16 (Tue)']),
    ("last night", WED, ['"last night" = 2023-05-16 (Tue)']),
    ("the day before yesterday", WED, ['"the day before yesterday" = 2023-05-15 (Mon)']),
    ("day before yesterday", WED, ['"day before yesterday" = 2023-05-15 (Mon)']),
    ("tomorrow", WED, ['"tomorrow" = 2023-05-18 (Thu)']),
    ("the day after tomorrow", WED, ['"the day after tomorrow" = 2023-05-19 (Fri)']),
    # N units ago
    ("3 days ago", WED, ['"3 days ago" = 2023-05-14 (Sun)']),
    ("three days ago", WED, ['"three days ago" = 2023-05-14 (Sun)']),
    ("twenty days ago", WED, ['"twenty days ago" = 2023-04-27 (Thu)']),
    ("a week ago", WED, ['"a week ago" = around 2023-05-10 (Wed)']),
    ("2 weeks ago", WED, ['"2 weeks ago" = around 2023-05-03 (Wed)']),
    ("two months ago", WED, ['"two months ago" = around 2023-03-17 (Fri)']),
    ("a year ago", WED, ['"a year ago" = around 2022-05-17 (Tue)']),
    ("an hour ago", WED, ['"an hour ago" = 2023-05-17 (Wed)']),
    ("20 minutes ago", WED, ['"20 minutes ago" = 2023-05-17 (Wed)']),
    ("a couple of days ago", WED,
     ['"a couple of days ago" = around 2023-05-14 (Sun) to 2023-05-15 (Mon)']),
    ("a couple days ago", WED,
     ['"a couple days ago" = around 2023-05-14 (Sun) to 2023-05-15 (Mon)']),
    ("a few days ago", SAT,
     ['"a few days ago" = around 2023-05-15 (Mon) to 2023-05-17 (Wed)']),
    ("a couple of weeks ago", WED,
     ['"a couple of weeks ago" = around 2023-04-26 (Wed) to 2023-05-03 (Wed)']),
    ("a few weeks ago", WED,
     ['"a few weeks ago" = around 2023-04-12 (Wed) to 2023-04-26 (Wed)']),
    ("3 weeks ago", SAT, ['"3 weeks ago" = around 2023-04-29 (Sat)']),
    # calendar periods, Wednesday anchor
    ("last week", WED, ['"last week" = 2023-05-08 (Mon) to 2023-05-14 (Sun)']),
    ("this week", WED, ['"this week" = 2023-05-15 (Mon) to 2023-05-21 (Sun)']),
    ("next week", WED, ['"next week" = 2023-05-22 (Mon) to 2023-05-28 (Sun)']),
    ("last weekend", WED, ['"last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("this weekend", WED, ['"this weekend" = 2023-05-20 (Sat) to 2023-05-21 (Sun)']),
    ("next weekend", WED, ['"next weekend" = 2023-05-27 (Sat) to 2023-05-28 (Sun)']),
    ("last month", WED, ['"last month" = 2023-04-01 (Sat) to 2023-04-30 (Sun)']),
    ("this month", WED, ['"this month" = 2023-05-01 (Mon) to 2023-05-31 (Wed)']),
    ("next month", WED, ['"next month" = 2023-06-01 (Thu) to 2023-06-30 (Fri)']),
    ("last year", WED, ['"last year" = 2022-01-01 (Sat) to 2022-12-31 (Sat)']),
    ("this year", WED, ['"this year" = 2023-01-01 (Sun) to 2023-12-31 (Sun)']),
    ("next year", WED, ['"next year" = 2024-01-01 (Mon) to 2024-12-31 (Tue)']),
    # weekdays, Wednesday anchor
    ("last Monday", WED, ['"last Monday" = 2023-05-15 (Mon)']),
    ("last Wednesday", WED, ['"last Wednesday" = 2023-05-10 (Wed)']),
    ("last Friday", WED, ['"last Friday" = 2023-05-12 (Fri)']),
    ("this Monday", WED, ['"this Monday" = 2023-05-15 (Mon)']),
    ("this Friday", WED, ['"this Friday" = 2023-05-19 (Fri)']),
    ("next Friday", WED, ['"next Friday" = 2023-05-26 (Fri)']),
    ("next Monday", WED, ['"next Monday" = 2023-05-22 (Mon)']),
    ("this past Monday", WED, ['"this past Monday" = 2023-05-15 (Mon)']),
    ("on Friday", WED, ['"on Friday" = 2023-05-12 (Fri)']),
    ("on Tuesday", WED, ['"on Tuesday" = 2023-05-16 (Tue)']),
    ("over the weekend", WED, ['"over the weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("this past weekend", WED, ['"this past weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("earlier this week", WED, ['"earlier this week" = 2023-05-15 (Mon) to 2023-05-16 (Tue)']),
    ("earlier this month", WED, ['"earlier this month" = 2023-05-01 (Mon) to 2023-05-16 (Tue)']),
    # future
    ("in 3 days", WED, ['"in 3 days" = 2023-05-20 (Sat)']),
    ("in two weeks", WED, ['"in two weeks" = around 2023-05-31 (Wed)']),
    ("in a week", WED, ['"in a week" = around 2023-05-24 (Wed)']),
    ("in a few days", WED, ['"in a few days" = around 2023-05-20 (Sat) to 2023-05-22 (Mon)']),
    # vague words say nothing
    ("recently", WED, []),
    ("the other day", WED, []),
    # Saturday anchor
    ("yesterday", SAT, ['"yesterday" = 2023-05-19 (Fri)']),
    ("last weekend", SAT, ['"last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("this weekend", SAT, ['"this weekend" = 2023-05-20 (Sat) to 2023-05-21 (Sun)']),
    ("next weekend", SAT, ['"next weekend" = 2023-05-27 (Sat) to 2023-05-28 (Sun)']),
    ("over the weekend", SAT, ['"over the weekend" = 2023-05-20 (Sat) to 2023-05-21 (Sun)']),
    ("this past weekend", SAT, ['"this past weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("on Saturday", SAT, ['"on Saturday" = 2023-05-13 (Sat)']),
    ("last Saturday", SAT, ['"last Saturday" = 2023-05-13 (Sat)']),
    ("next Monday", SAT, ['"next Monday" = 2023-05-22 (Mon)']),
    # Sunday anchor
    ("last weekend", SUN, ['"last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("this weekend", SUN, ['"this weekend" = 2023-05-20 (Sat) to 2023-05-21 (Sun)']),
    ("over the weekend", SUN, ['"over the weekend" = 2023-05-20 (Sat) to 2023-05-21 (Sun)']),
    ("last week", SUN, ['"last week" = 2023-05-08 (Mon) to 2023-05-14 (Sun)']),
    ("this Monday", SUN, ['"this Monday" = 2023-05-15 (Mon)']),
    ("next Monday", SUN, ['"next Monday" = 2023-05-22 (Mon)']),
    ("earlier this week", SUN, ['"earlier this week" = 2023-05-15 (Mon) to 2023-05-20 (Sat)']),
    # Monday anchor
    ("earlier this week", MON, []),
    ("last Monday", MON, ['"last Monday" = 2023-05-08 (Mon)']),
    ("on Monday", MON, ['"on Monday" = 2023-05-08 (Mon)']),
    ("over the weekend", MON, ['"over the weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)']),
    ("this Friday", MON, ['"this Friday" = 2023-05-19 (Fri)']),
    ("next Friday", MON, ['"next Friday" = 2023-05-26 (Fri)']),
    # month and year boundaries
    ("last month", D("2023-01-15"), ['"last month" = 2022-12-01 (Thu) to 2022-12-31 (Sat)']),
    ("last year", D("2023-01-15"), ['"last year" = 2022-01-01 (Sat) to 2022-12-31 (Sat)']),
    ("yesterday", D("2024-03-01"), ['"yesterday" = 2024-02-29 (Thu)']),
    ("a month ago", D("2024-03-31"), ['"a month ago" = around 2024-02-29 (Thu)']),
    ("a year ago", D("2024-02-29"), ['"a year ago" = around 2023-02-28 (Tue)']),
    ("next week", D("2023-12-28"), ['"next week" = 2024-01-01 (Mon) to 2024-01-07 (Sun)']),
    ("next month", D("2023-12-28"), ['"next month" = 2024-01-01 (Mon) to 2024-01-31 (Wed)']),
    ("last week", D("2024-01-01"), ['"last week" = 2023-12-25 (Mon) to 2023-12-31 (Sun)']),
    ("tomorrow", D("2023-12-31"), ['"tomorrow" = 2024-01-01 (Mon)']),
    ("earlier this month", D("2023-05-01"), []),
    # case, position, order, de-duplication, whitespace
    ("YESTERDAY was long", WED, ['"YESTERDAY" = 2023-05-16 (Tue)']),
    ("Yesterday I went to the store.", WED, ['"Yesterday" = 2023-05-16 (Tue)']),
    ("On Friday we went out. Last week was busy.", WED,
     ['"On Friday" = 2023-05-12 (Fri)', '"Last week" = 2023-05-08 (Mon) to 2023-05-14 (Sun)']),
    ("I went hiking last weekend and then yesterday I rested.", SAT,
     ['"last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun)', '"yesterday" = 2023-05-19 (Fri)']),
    ("Yesterday was fun; yesterday I also cooked.", WED, ['"Yesterday" = 2023-05-16 (Tue)']),
    ("I went to the gym last\n  week", WED, ['"last week" = 2023-05-08 (Mon) to 2023-05-14 (Sun)']),
    ("We left on Friday night, about 2 weeks ago.", WED,
     ['"on Friday" = 2023-05-12 (Fri)', '"2 weeks ago" = around 2023-05-03 (Wed)']),
]


@pytest.mark.parametrize(("text", "anchor", "expected"), RELATIVE_CASES)
def test_resolve_relative(text: str, anchor: date, expected: list[str]) -> None:
    assert [r.describe() for r in resolve_relative(text, anchor)] == expected


def test_relative_table_covers_required_anchors() -> None:
    weekdays = {anchor.weekday() for _, anchor, _ in RELATIVE_CASES}
    assert {0, 2, 5, 6} <= weekdays
    assert len(RELATIVE_CASES) >= 60


def test_dateref_fields() -> None:
    [ref] = resolve_relative("It rained 3 weeks ago.", SAT)
    assert ref == DateRef("3 weeks ago", D("2023-04-29"), D("2023-04-29"), True)
    [ref] = resolve_relative("Last weekend was fun", SAT)
    assert (ref.phrase, ref.start, ref.end, ref.approximate) == (
        "Last weekend", D("2023-05-13"), D("2023-05-14"), False)


def test_anchor_may_be_datetime() -> None:
    [ref] = resolve_relative("yesterday", datetime(2023, 5, 17, 9, 30))
    assert ref.start == D("2023-05-16")


MUST_NOT_FIRE = [
    "I finally finished The Last of Us.",
    "We binged Friday Night Lights on Friday Night Lights weekends.",
    "She sat next to me on the bus.",
    "I bought a week's worth of groceries.",
    "The last time I went there it was closed.",
    "I want the last one.",
    "What are the next steps?",
    "Did you see this week's episode?",
    "I need a new weekend bag.",
    "We had a Sunday roast with the family.",
    "Our team tracks tasks in Monday.com.",
    "I was on the today show once.",
    "I watched the Today show.",
    "That happened months ago.",
    "I'll be there in a few.",
    "Last Christmas I gave you my heart",
    "We went to Tomorrowland in Belgium.",
    "That is yesterday's news.",
    "I watched The Day After Tomorrow again.",
    "I love the song Yesterday by the Beatles.",
    "I love Last Week Tonight with John Oliver.",
    "I have been sick for the last week.",
    "For the next week I will be offline.",
    "The next Friday after the party was quiet.",
    "I go swimming on Mondays and every Tuesday.",
    "It took 1.5 weeks ago-ish to arrive.",
    "Weeks ago, maybe.",
    "It happened 24 hours ago.",
    "That was 0 days ago.",
    "Someday I will visit Chicago.",
    "I recently started running.",
    "We watched Saturday Night Live on Saturday Night Live reruns.",
    "I followed up-yesterday with mid-week tasks.",
    "",
]


@pytest.mark.parametrize("text", MUST_NOT_FIRE)
def test_must_not_fire(text: str) -> None:
    assert resolve_relative(text, WED) == []
    assert date_note(text, WED) is None


def test_date_note_format() -> None:
    note = date_note("I went hiking last weekend and then yesterday I rested.", SAT)
    assert note == (
        '[dates: "last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun); '
        '"yesterday" = 2023-05-19 (Fri)]'
    )
    assert date_note("a few days ago", SAT) == (
        '[dates: "a few days ago" = around 2023-05-15 (Mon) to 2023-05-17 (Wed)]')


def test_date_note_none() -> None:
    assert date_note("Can you recommend a good sourdough recipe?", SAT) is None
    assert date_note("I recently moved.", SAT) is None


def test_dateref_describe() -> None:
    assert DateRef("yesterday", D("2023-05-19"), D("2023-05-19"), False).describe() == (
        '"yesterday" = 2023-05-19 (Fri)')
    assert DateRef("3 weeks ago", D("2023-04-29"), D("2023-04-29"), True).describe() == (
        '"3 weeks ago" = around 2023-04-29 (Sat)')


def test_windowed_scan_matches_full_scan() -> None:
    # The trigger-window scan must find exactly what one finditer finds.
    rng = random.Random(7)
    frags = [
        "the day before yesterday", "yesterday", "last weekend", "a couple of minutes ago",
        "this past wednesday", "in a few weeks", "3 days ago", "on friday", "next month",
        "earlier this month", "over the weekend", "today", "monday", "day", "week", "the",
        "a", "in", "couple", "few", "of", "ago", "last", "this", "next", "someday",
        "weekends", "chicago", "12", "1.5", ",", ".", "\n", "tonight", "this morning",
        "x" * 50, "   ",
    ]
    for _ in range(2000):
        text = " ".join(rng.choice(frags) for _ in range(rng.randint(1, 40)))
        got = [(m.span(), m.lastgroup) for m in dates._rel_matches(text)]
        want = [(m.span(), m.lastgroup) for m in dates._REL_RE.finditer(text.lower())]
        assert got == want, text


def test_text_whose_length_changes_when_lowercased() -> None:
    # "İ".lower() is two characters; the IGNORECASE fallback keeps spans right.
    [ref] = resolve_relative("İstanbul yesterday", WED)
    assert ref.phrase == "yesterday"


# --------------------------------------------------------------------------
# question_ranges
# --------------------------------------------------------------------------

Q = SAT  # 2023-05-20

QUESTION_CASES = [
    ("What did I do on 2023-05-01?", [("2023-05-01", "2023-05-01")]),
    ("What happened on May 5th?", [("2023-05-05", "2023-05-05")]),
    ("What happened on May 5?", [("2023-05-05", "2023-05-05")]),
    ("Where was I on May 25?", [("2022-05-25", "2022-05-25")]),
    ("What did I eat on May 5, 2022?", [("2022-05-05", "2022-05-05")]),
    ("What about 5 May 2021?", [("2021-05-05", "2021-05-05")]),
    ("What did I do on the 3rd of March?", [("2023-03-03", "2023-03-03")]),
    ("What did I do on the 3rd of march?", [("2023-03-03", "2023-03-03")]),
    ("Who visited on Dec 25?", [("2022-12-25", "2022-12-25")]),
    ("Who visited on Sept 3?", [("2022-09-03", "2022-09-03")]),
    ("Who visited on 12 Aug?", [("2022-08-12", "2022-08-12")]),
    ("What did I buy in May?", [("2023-05-01", "2023-05-31")]),
    ("What did I buy in June?", [("2022-06-01", "2022-06-30")]),
    ("what did i buy in june?", [("2022-06-01", "2022-06-30")]),
    ("What did I buy in May 2022?", [("2022-05-01", "2022-05-31")]),
    ("What did I buy in May of 2021?", [("2021-05-01", "2021-05-31")]),
    ("How was March 2023?", [("2023-03-01", "2023-03-31")]),
    ("What did I plan for early May?", [("2023-05-01", "2023-05-10")]),
    ("What happened mid-May?", [("2023-05-11", "2023-05-20")]),
    ("What happened in mid May?", [("2023-05-11", "2023-05-20")]),
    ("What happened in late May?", [("2022-05-21", "2022-05-31")]),
    ("What happened in late April?", [("2023-04-21", "2023-04-30")]),
    ("What happened in early March of 2022?", [("2022-03-01", "2022-03-10")]),
    ("Which books did I read in 2022?", [("2022-01-01", "2022-12-31")]),
    ("Which books did I read during 2021?", [("2021-01-01", "2021-12-31")]),
    ("What did I cook in the past two weeks?", [("2023-05-06", "2023-05-20")]),
    ("What did I cook in the last 3 days?", [("2023-05-17", "2023-05-20")]),
    ("What did I cook in the past month?", [("2023-04-20", "2023-05-20")]),
    ("What did I cook over the past year?", [("2022-05-20", "2023-05-20")]),
    ("What did I cook in the last week?", [("2023-05-13", "2023-05-20")]),
    ("What did I cook in the past few weeks?", [("2023-04-15", "2023-05-20")]),
    ("What did I buy last weekend?", [("2023-05-13", "2023-05-14")]),
    ("What did I buy two weeks ago?", [("2023-05-06", "2023-05-06")]),
    ("Where did I go on May 5th and last weekend?",
     [("2023-05-05", "2023-05-05"), ("2023-05-13", "2023-05-14")]),
    ("In May I ran; in May I swam. What else in May?", [("2023-05-01", "2023-05-31")]),
    ("What did I do on Feb 29?", [("2020-02-29", "2020-02-29")]),
    ("I may go hiking, what do you think?", []),
    ("Should we march on?", []),
    ("What did I do in may?", []),
    ("What do you think about late may?", []),
    ("Will we march 5 miles?", []),
    ("What did I do on may 5?", [("2023-05-05", "2023-05-05")]),
    ("What happened on 2023-02-30?", []),
    ("What happened in 1850?", []),
    ("What did I do in the last week of May?", []),
    ("What is my favourite colour?", []),
]


@pytest.mark.parametrize(("question", "expected"), QUESTION_CASES)
def test_question_ranges(question: str, expected: list[tuple[str, str]]) -> None:
    assert question_ranges(question, Q) == [(D(a), D(b)) for a, b in expected]


# --------------------------------------------------------------------------
# parse_datetime and bounds
# --------------------------------------------------------------------------

ACCEPTED = [
    ("2023-05-20", datetime(2023, 5, 20), False),
    ("2023-05-20T14:30", datetime(2023, 5, 20, 14, 30), True),
    ("2023-05-20T14:30:15", datetime(2023, 5, 20, 14, 30, 15), True),
    ("2023-05-20 14:30:15", datetime(2023, 5, 20, 14, 30, 15), True),
    ("2023-05-20T14:30:15.250", datetime(2023, 5, 20, 14, 30, 15, 250000), True),
    ("2023-05-20T14:30:15Z", datetime(2023, 5, 20, 14, 30, 15), True),
    ("2023-05-20T14:30Z", datetime(2023, 5, 20, 14, 30), True),
    ("2023-05-20T14:30:15+02:00", datetime(2023, 5, 20, 12, 30, 15), True),
    ("2023-05-20T23:30:00-02:00", datetime(2023, 5, 21, 1, 30), True),
    ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21), True),
    ("2023/05/20", datetime(2023, 5, 20), False),
    ("2023/05/20 (Sat)", datetime(2023, 5, 20), False),
    ("2023/05/20 02:21", datetime(2023, 5, 20, 2, 21), True),
    ("  2023-05-20\n", datetime(2023, 5, 20), False),
]


@pytest.mark.parametrize(("text", "dt", "has_time"), ACCEPTED)
def test_parse_datetime_accepts(text: str, dt: datetime, has_time: bool) -> None:
    assert parse_datetime(text) == (dt, has_time)
    assert parse_datetime(text)[0].tzinfo is None


REJECTED = [
    "5",
    "yesterday",
    "2023-13-01",
    "",
    "   ",
    "hello",
    "2023/05/20 (Sat) 25:00",
    "2023-02-30",
    "2023",
    "2023-05",
    "20230520",
    "2023-W20",
    "05/20/2023",
    "2023-5-20",
    "2023-05-20T14",
    "2023-05-20T14:30:15+0200",
    "2023-05-20T14:61",
    "2023-05-20 hello",
]


@pytest.mark.parametrize("text", REJECTED)
def test_parse_datetime_rejects(text: str) -> None:
    with pytest.raises(DateFormatError) as info:
        parse_datetime(text)
    msg = str(info.value)
    assert repr(text) in msg
    assert "\n" not in msg
    assert "YYYY-MM-DD" in msg
    assert isinstance(info.value, InputError)


def test_parse_datetime_message() -> None:
    with pytest.raises(DateFormatError, match=r"^'hello' is not a date; use YYYY-MM-DD or "
                       r"YYYY-MM-DDTHH:MM\[:SS\] \(ISO-8601\)$"):
        parse_datetime("hello")


def test_parse_datetime_rejects_non_string() -> None:
    with pytest.raises(DateFormatError):
        parse_datetime(None)  # type: ignore[arg-type]


def test_to_iso_and_parse_iso() -> None:
    assert to_iso(datetime(2023, 5, 20, 14, 30, 15, 999999)) == "2023-05-20T14:30:15"
    assert to_iso(date(2023, 5, 20)) == "2023-05-20T00:00:00"  # type: ignore[arg-type]
    assert parse_iso("2023-05-20") == "2023-05-20T00:00:00"
    assert parse_iso("2023/05/20 (Sat) 02:21") == "2023-05-20T02:21:00"
    assert parse_iso("2023-05-20T14:30:15.7+01:00") == "2023-05-20T13:30:15"


def test_bounds() -> None:
    assert as_of_bound("2023-05-20") == "2023-05-20T23:59:59"
    assert as_of_bound("2023-05-20T08:00") == "2023-05-20T08:00:00"
    assert after_bound("2023-05-20") == "2023-05-20T23:59:59"
    assert after_bound("2023-05-20 08:00:05") == "2023-05-20T08:00:05"
    # Stored strings compare the intended way.
    assert "2023-05-20T23:59:59" <= as_of_bound("2023-05-20") < "2023-05-21T00:00:00"
    assert not ("2023-05-20T23:59:59" > after_bound("2023-05-20"))
    assert "2023-05-21T00:00:00" > after_bound("2023-05-20")
    with pytest.raises(DateFormatError):
        as_of_bound("soon")


# --------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------


def test_format_day() -> None:
    assert format_day(date(2023, 5, 20)) == "2023-05-20 (Sat)"
    assert format_day(date(2024, 2, 29)) == "2024-02-29 (Thu)"
    assert format_day(datetime(2023, 5, 15, 10, 0)) == "2023-05-15 (Mon)"


@pytest.mark.parametrize(("days", "expected"), [
    (0, "the same day as the question"),
    (1, "1 day before the question"),
    (10, "10 days before the question"),
    (13, "13 days before the question"),
    (14, "14 days (about 2 weeks) before the question"),
    (45, "45 days (about 6 weeks) before the question"),
    (75, "75 days (about 2 months) before the question"),
    (200, "200 days (about 7 months) before the question"),
    (400, "400 days (about 1 year) before the question"),
    (600, "600 days (about 1.6 years) before the question"),
    (730, "730 days (about 2 years) before the question"),
    (-1, "1 day after the question"),
    (-3, "3 days after the question"),
    (-30, "30 days (about 4 weeks) after the question"),
])
def test_describe_distance(days: int, expected: str) -> None:
    q = date(2023, 5, 20)
    assert describe_distance(date.fromordinal(q.toordinal() - days), q) == expected
