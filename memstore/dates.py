"""Dates: strict parsing, human formatting and rule-based relative dates.

Stored timestamps are naive ``YYYY-MM-DDTHH:MM:SS`` strings (UTC when the
input carried an offset), so they sort and compare correctly as text in SQL.

The relative-date resolver is deliberately conservative: a wrong date in a
memory note misleads the answering model more than a missing one, so every
expression is matched as a whole phrase with guards against titles
("The Day After Tomorrow", "Friday Night Lights"), possessives and
look-alike idioms ("the last week", "next to").
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from dateutil.parser import isoparse
from dateutil.relativedelta import relativedelta

from memstore.errors import DateFormatError

__all__ = [
    "DateRef",
    "after_bound",
    "as_of_bound",
    "date_note",
    "describe_distance",
    "format_day",
    "parse_datetime",
    "parse_iso",
    "question_ranges",
    "resolve_relative",
    "to_iso",
]

# English abbreviations regardless of locale (strftime('%a') is locale-bound).
_DAY_ABBR = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_INDEX = {name: i for i, name in enumerate(_WEEKDAYS)}

# --------------------------------------------------------------------------
# Strict parsing
# --------------------------------------------------------------------------

# isoparse alone is too lenient ("2023", "2023-05", "20230520", "2023-W20"),
# so the accepted shapes are gated by a regex and isoparse only builds values.
_ISO_SHAPE = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?P<time>[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?)?"
)
# LongMemEval writes session dates as '2023/05/20 (Sat) 02:21'.
_LME_SHAPE = re.compile(
    r"(?P<y>\d{4})/(?P<m>\d{2})/(?P<d>\d{2})"
    r"(?:\s*\([A-Za-z]{2,9}\))?"
    r"(?:\s+(?P<H>\d{2}):(?P<M>\d{2}))?"
)
_FORMAT_HINT = "use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (ISO-8601)"


def _bad_date(text: object, reason: str | None = None) -> DateFormatError:
    shown = text if not isinstance(text, str) or len(text) <= 60 else text[:57] + "..."
    why = f" ({reason})" if reason else ""
    # repr() keeps the message on one line even if the input has newlines.
    return DateFormatError(f"{shown!r} is not a date{why}; {_FORMAT_HINT}")


def parse_datetime(text: str) -> tuple[datetime, bool]:
    """Parse a strict ISO-8601 or LongMemEval date/time.

    Returns ``(naive datetime, has_time)``.  An aware value is converted to
    UTC and made naive.  Raises :class:`DateFormatError` for anything else.
    """
    if not isinstance(text, str):
        raise _bad_date(text)
    s = text.strip()
    m = _ISO_SHAPE.fullmatch(s)
    if m:
        try:
            dt = isoparse(s)
        except (ValueError, OverflowError) as exc:
            raise _bad_date(text, str(exc)) from None
        if dt.tzinfo is not None:
            dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
        return dt, m.group("time") is not None
    m = _LME_SHAPE.fullmatch(s)
    if m:
        has_time = m.group("H") is not None
        try:
            dt = datetime(
                int(m.group("y")),
                int(m.group("m")),
                int(m.group("d")),
                int(m.group("H")) if has_time else 0,
                int(m.group("M")) if has_time else 0,
            )
        except ValueError as exc:
            raise _bad_date(text, str(exc)) from None
        return dt, has_time
    raise _bad_date(text)


def to_iso(dt: datetime) -> str:
    """Format as ``YYYY-MM-DDTHH:MM:SS`` (seconds precision, naive UTC)."""
    if not isinstance(dt, datetime):  # a plain date means its midnight
        dt = datetime(dt.year, dt.month, dt.day)
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt.replace(microsecond=0).isoformat(timespec="seconds")


def parse_iso(text: str) -> str:
    """Parse ``text`` strictly and return it as a stored timestamp string."""
    return to_iso(parse_datetime(text)[0])


def as_of_bound(text: str) -> str:
    """Inclusive upper bound for ``at <= bound``; a bare date covers its whole day."""
    dt, has_time = parse_datetime(text)
    return to_iso(dt) if has_time else f"{dt.date().isoformat()}T23:59:59"


def after_bound(text: str) -> str:
    """Exclusive lower bound for ``at > bound``; a bare date means after that whole day."""
    dt, has_time = parse_datetime(text)
    return to_iso(dt) if has_time else f"{dt.date().isoformat()}T23:59:59"


# --------------------------------------------------------------------------
# Human formatting
# --------------------------------------------------------------------------


def _as_date(d: date) -> date:
    return d.date() if isinstance(d, datetime) else d


def format_day(d: date) -> str:
    """Format a day as ``'2023-05-20 (Sat)'``."""
    d = _as_date(d)
    return f"{d.isoformat()} ({_DAY_ABBR[d.weekday()]})"


def labelled_time(text: str) -> tuple[datetime, str]:
    """Parse a date or date-time, and label it as the memory text writes it: ``2024-05-01 (Wed) 09:15``."""
    when, has_time = parse_datetime(text)
    return when, format_day(when.date()) + (when.strftime(" %H:%M") if has_time else "")


def _rough(days: int) -> str:
    """Rough unit for a distance of ``days`` (>= 14), e.g. ``'about 6 weeks'``.

    Rounding: weeks (days/7, nearest) below 60 days; months (days/30.44,
    nearest) below 350 days; otherwise years to one decimal, shown whole when
    within 0.1 of an integer (400 days -> 1 year, 600 -> 1.6 years).
    """
    if days < 60:
        return f"about {round(days / 7)} weeks"
    if days < 350:
        return f"about {round(days / 30.44)} months"
    tenths = round(days * 10 / 365.25)
    if tenths % 10 in (0, 1, 9):
        years = round(tenths / 10)
        return f"about {years} year{'s' if years != 1 else ''}"
    return f"about {tenths / 10:.1f} years"


def describe_distance(day: date, question_day: date) -> str:
    """Describe how far ``day`` lies from ``question_day``.

    ``'10 days before the question'``; from 14 days on a rough unit is added:
    ``'45 days (about 6 weeks) before the question'``.
    """
    n = (_as_date(question_day) - _as_date(day)).days
    if n == 0:
        return "the same day as the question"
    side = "before" if n > 0 else "after"
    n = abs(n)
    text = f"{n} day{'s' if n != 1 else ''}"
    if n >= 14:
        text += f" ({_rough(n)})"
    return f"{text} {side} the question"


# --------------------------------------------------------------------------
# Relative date expressions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class DateRef:
    """A date expression found in a text, resolved to an inclusive day range."""

    phrase: str
    start: date
    end: date
    approximate: bool

    def describe(self) -> str:
        """``'"yesterday" = 2023-05-19 (Fri)'``; ranges use ``to``, guesses ``around``."""
        when = format_day(self.start)
        if self.end != self.start:
            when += f" to {format_day(self.end)}"
        if self.approximate:
            when = "around " + when
        return f'"{self.phrase}" = {when}'


_NUM_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "a": 1, "an": 1,
}
_NUM = r"\d{1,3}|" + "|".join(sorted((w for w in _NUM_WORDS if len(w) > 2), key=len, reverse=True))
_WD = "|".join(_WEEKDAYS)
# "a couple of" spans 2-3 units and "a few" 3-5 units, for days, weeks and months.
_VAGUE = {"couple": (2, 3), "few": (3, 5)}

# Whole words only.  The start guard also stops "1.5 weeks ago" reading as
# "5 weeks ago"; the end guard rejects hyphenated words, "Monday.com" and
# possessives ("yesterday's news", "this week's episode", "a week's worth"),
# which are too often idiomatic to trust.
_START = r"(?<![\w'’-])(?<!\d[.,])"
_END = r"(?![\w-]|['’]\w|\.\w)"

_REL_RULES: list[tuple[str, str]] = [
    ("dby", r"(?:the\s+)?day\s+before\s+yesterday"),
    ("dat", r"(?:the\s+)?day\s+after\s+tomorrow"),
    ("today", r"today(?!\s+show\b)"),
    ("tonight", r"tonight(?!\s+show\b)"),
    ("yesterday", r"yesterday"),
    ("tomorrow", r"tomorrow"),
    ("daypart", r"this\s+(?:morning|afternoon|evening)"),
    ("lastnight", r"last\s+night"),
    ("earlier", r"earlier\s+this\s+(?P<ear_u>week|month)"),
    ("pastweekend", r"this\s+past\s+weekend"),
    ("pastwd", r"this\s+past\s+(?P<pw_d>" + _WD + r")"),
    ("overweekend", r"over\s+the\s+weekend"),
    ("period", r"(?P<per_w>last|this|next)\s+(?P<per_u>weekend|week|month|year)"),
    ("relwd", r"(?P<rw_w>last|this|next)\s+(?P<rw_d>" + _WD + r")"),
    ("onwd", r"on\s+(?P<on_d>" + _WD + r")"),
    ("soonago", r"(?:an?|(?P<sa_n>" + _NUM + r")|a\s+(?:couple(?:\s+of)?|few))"
                r"\s+(?P<sa_u>hour|minute)s?\s+ago"),
    ("vagueago", r"a\s+(?P<va_q>couple|few)(?:\s+of)?\s+(?P<va_u>day|week|month)s\s+ago"),
    ("ago", r"(?P<ago_n>" + _NUM + r"|an?)\s+(?P<ago_u>day|week|month|year)s?\s+ago"),
    ("vaguein", r"in\s+a\s+(?P<vi_q>couple|few)(?:\s+of)?\s+(?P<vi_u>day|week)s"),
    # Known risk: "finished it in 3 days" is a duration, not a date.
    ("inn", r"in\s+(?P<in_n>" + _NUM + r"|an?)\s+(?P<in_u>day|week)s?"),
]


def _combine(rules: list[tuple[str, str]], flags: int = 0, first: str = "") -> re.Pattern[str]:
    body = "|".join(f"(?P<{name}>{pat})" for name, pat in rules)
    # The optional first-character lookahead rejects most positions before
    # the (costlier) lookbehinds and the long alternation are tried.
    head = f"(?=[{first}])" if first else ""
    return re.compile(f"{head}{_START}(?:{body}){_END}", flags)


# First letters of every relative rule, and the words one of which every
# match contains; a text without any of those words cannot match.
_REL_FIRST = "tdyleonaifs0-9"
_REL_TRIGGERS = ("day", "week", "month", "year", "ago", "night", "morning",
                 "afternoon", "evening", "tomorrow")
# Matching runs on the lower-cased text (case-sensitive matching is ~1.5x
# faster); the IGNORECASE twin is for the rare text whose length changes
# when lower-cased ("İ"), where positions would no longer line up.
_REL_RE = _combine(_REL_RULES, 0, _REL_FIRST)
_REL_RE_I = _combine(_REL_RULES, re.IGNORECASE, _REL_FIRST)
# A match starts at most _LOOKBACK characters before its first trigger word
# ("a couple of minutes ago" has it at 20); each window is searched up to
# _WINDOW characters past the trigger (see _rel_matches).
_LOOKBACK = 40
_WINDOW = 160
_THE_BEFORE = re.compile(r"(?:^|\W)the\s+\Z", re.IGNORECASE)
# "on Friday Night Lights", "last Monday Night Football": a weekday followed
# by a capitalised word (other than "I" or a month) is taken as a title.
_CAP_AFTER = re.compile(
    r"\s+(?!I\b|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b)[A-Z][a-z]"
)
_THE_GUARDED = frozenset({"lastnight", "period", "relwd"})
_WEEKDAY_RULES = frozenset({"relwd", "onwd", "pastwd"})
# One-word titles ("the song Yesterday", "the Today show") look like a
# sentence-initial word, so they are only caught when mid-sentence.
_TITLE_WORD = re.compile(r"[A-Z][a-z]")


def _num(word: str | None) -> int:
    if not word:
        return 1
    w = word.lower()
    return int(w) if w.isdigit() else _NUM_WORDS[w]


def _shift_month(year: int, month: int, step: int) -> tuple[int, int]:
    y, m = divmod(year * 12 + month - 1 + step, 12)
    return y, m + 1


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _before(anchor: date, weekday: int) -> date:
    """The most recent ``weekday`` strictly before ``anchor``."""
    return anchor - timedelta(days=(anchor.weekday() - weekday - 1) % 7 + 1)


def _weekend(anchor: date, weeks: int) -> tuple[date, date]:
    """Saturday-Sunday of the Monday-Sunday week ``weeks`` away from anchor's."""
    sat = _monday(anchor) + timedelta(days=7 * weeks + 5)
    return sat, sat + timedelta(days=1)


_Span = tuple[date, date, bool]


def _resolve_match(m: re.Match[str], a: date) -> _Span | None:
    """Turn one match of ``_REL_RE`` into (start, end, approximate)."""
    kind = m.lastgroup
    one = timedelta(days=1)
    if kind in ("today", "tonight", "daypart"):
        return a, a, False
    if kind in ("yesterday", "lastnight"):  # "last night" = the previous evening
        return a - one, a - one, False
    if kind == "dby":
        return a - 2 * one, a - 2 * one, False
    if kind == "tomorrow":
        return a + one, a + one, False
    if kind == "dat":
        return a + 2 * one, a + 2 * one, False
    if kind == "earlier":
        # From the week's Monday / month's 1st to the day before the anchor;
        # nothing when the anchor is itself that first day.
        first = _monday(a) if m.group("ear_u").lower() == "week" else a.replace(day=1)
        return (first, a - one, False) if first < a else None
    if kind == "pastweekend":
        # The most recent *finished* weekend: on Sat/Sun, the one before.
        return (*_weekend(a, -1), False)
    if kind == "overweekend":
        # Mon-Fri: the weekend just past; Sat/Sun: the current weekend.
        return (*_weekend(a, 0 if a.weekday() >= 5 else -1), False)
    if kind == "period":
        which = m.group("per_w").lower()
        step = {"last": -1, "this": 0, "next": 1}[which]
        unit = m.group("per_u").lower()
        if unit == "week":  # calendar weeks, Monday-Sunday
            mon = _monday(a) + timedelta(weeks=step)
            return mon, mon + timedelta(days=6), False
        if unit == "weekend":
            # The weekend of last/this/next Monday-Sunday week: on a Sunday
            # "last weekend" is the previous Sat-Sun, "this weekend" today's;
            # on a Wednesday "next weekend" is the one after the coming one.
            return (*_weekend(a, step), False)
        if unit == "month":
            return (*_month_range(*_shift_month(a.year, a.month, step)), False)
        year = a.year + step
        return date(year, 1, 1), date(year, 12, 31), False
    if kind in ("relwd", "onwd", "pastwd"):
        group = {"relwd": "rw_d", "onwd": "on_d", "pastwd": "pw_d"}[kind]
        wd = _WEEKDAY_INDEX[m.group(group).lower()]
        which = m.group("rw_w").lower() if kind == "relwd" else "last"
        if which == "last":
            # "last/on/this past Friday": the most recent Friday strictly
            # before the anchor (on a Wednesday, "last Monday" is 2 days ago).
            d = _before(a, wd)
        elif which == "this":  # that day of the anchor's Monday-Sunday week
            d = _monday(a) + timedelta(days=wd)
        else:  # "next Friday" on a Wednesday = Friday of next week (+9 days)
            d = _monday(a) + timedelta(days=7 + wd)
        return d, d, False
    if kind == "soonago":
        # Minutes/hours ago is still the anchor day; beyond 6 hours it may
        # well be the day before, so say nothing.
        if m.group("sa_u").lower() == "hour" and _num(m.group("sa_n")) > 6:
            return None
        return a, a, False
    if kind in ("vagueago", "vaguein"):
        q, u = (m.group("va_q"), m.group("va_u")) if kind == "vagueago" else (
            m.group("vi_q"), m.group("vi_u"))
        lo, hi = _VAGUE[q.lower()]
        sign = -1 if kind == "vagueago" else 1
        u = u.lower()
        if u == "month":
            near, far = a + relativedelta(months=sign * lo), a + relativedelta(months=sign * hi)
        else:
            size = 7 if u == "week" else 1
            near, far = a + timedelta(days=sign * lo * size), a + timedelta(days=sign * hi * size)
        return min(near, far), max(near, far), True
    if kind in ("ago", "inn"):
        n = _num(m.group("ago_n") if kind == "ago" else m.group("in_n"))
        if n == 0:
            return None
        u = (m.group("ago_u") if kind == "ago" else m.group("in_u")).lower()
        sign = -1 if kind == "ago" else 1
        # "N days" is usually counted; weeks/months/years are rounded figures.
        if u == "day":
            d = a + timedelta(days=sign * n)
        elif u == "week":
            d = a + timedelta(days=sign * 7 * n)
        elif u == "month":
            d = a + relativedelta(months=sign * n)
        else:
            d = a + relativedelta(years=sign * n)
        return d, d, u != "day"
    return None  # pragma: no cover - every rule is handled above


def _mid_sentence(text: str, start: int) -> bool:
    """True when the word at ``start`` follows a word or comma in the same sentence."""
    j = start - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return j >= 0 and (text[j].isalnum() or text[j] in ",;")


def _looks_like_title(text: str, start: int, phrase: str) -> bool:
    """A capitalised word that prose would write in lower case marks a title.

    Exempt: weekday names, and the first word when it starts a sentence.
    """
    for i, w in enumerate(phrase.split()):
        if not _TITLE_WORD.match(w) or w.lower() in _WEEKDAY_INDEX:
            continue
        if i == 0 and not _mid_sentence(text, start):
            continue
        return True
    return False


def _trigger_positions(low: str) -> list[int]:
    """Sorted offsets of trigger words in lower-cased text (str.find is far
    cheaper than any regex scan, and most messages have none)."""
    hits: list[int] = []
    for word in _REL_TRIGGERS:
        j = low.find(word)
        while j >= 0:
            hits.append(j)
            j = low.find(word, j + 1)
    hits.sort()
    return hits


def _rel_matches(text: str) -> list[re.Match[str]]:
    """All matches of the relative pattern, as a whole-text finditer would
    give them, but only scanning windows around trigger words."""
    low = text.lower()
    hits = _trigger_positions(low)
    if not hits:
        return []
    if len(low) != len(text):
        return list(_REL_RE_I.finditer(text))
    out: list[re.Match[str]] = []
    pos = 0
    n = len(low)
    for p in hits:
        if p < pos:
            continue  # inside a match already taken
        # No match can start in [pos, p - _LOOKBACK): it would need a trigger before p.
        lo = max(pos, p - _LOOKBACK)
        end = min(n, p + _WINDOW)
        m = _REL_RE.search(low, lo, end)
        if m is None or m.start() > p:
            continue  # any later match holds a later trigger
        if end < n and m.end() > end - 16:
            # Too close to the cut for the end guard to be trusted.
            m = _REL_RE.search(low, lo)
            if m is None:
                continue
        out.append(m)
        pos = m.end()
    return out


def _rel_candidates(text: str, anchor: date) -> list[tuple[int, int, DateRef]]:
    out: list[tuple[int, int, DateRef]] = []
    for m in _rel_matches(text):
        kind = m.lastgroup
        s, e = m.span()
        phrase = text[s:e]
        if kind in _THE_GUARDED and phrase[:4].lower() != "this" and _THE_BEFORE.search(
            text, max(0, s - 12), s
        ):
            continue
        if not phrase.islower() and _looks_like_title(text, s, phrase):
            continue
        if kind in _WEEKDAY_RULES and _CAP_AFTER.match(text, e):
            continue
        try:
            span = _resolve_match(m, anchor)
        except (ValueError, OverflowError):  # e.g. "999 years ago" before year 1
            continue
        if span is None:
            continue
        out.append((s, e, DateRef(" ".join(phrase.split()), span[0], span[1], span[2])))
    return out


def resolve_relative(text: str, anchor: date) -> list[DateRef]:
    """Find relative date expressions in ``text`` and resolve them against ``anchor``.

    Returns them in order of appearance; the same (phrase, range) only once.
    Vague words ("recently", "the other day") resolve to nothing.
    """
    if not text:
        return []
    refs: list[DateRef] = []
    seen: set[tuple[str, date, date]] = set()
    for _, _, ref in _rel_candidates(text, _as_date(anchor)):
        key = (ref.phrase.lower(), ref.start, ref.end)
        if key not in seen:
            seen.add(key)
            refs.append(ref)
    return refs


def date_note(text: str, anchor: date) -> str | None:
    """One line describing the relative dates in ``text``, or None if there are none.

    ``'[dates: "last weekend" = 2023-05-13 (Sat) to 2023-05-14 (Sun); ...]'``
    """
    refs = resolve_relative(text, anchor)
    if not refs:
        return None
    return "[dates: " + "; ".join(r.describe() for r in refs) + "]"


# --------------------------------------------------------------------------
# Dates a question mentions
# --------------------------------------------------------------------------

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
    "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|"
    r"november|december|(?:jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?)"
)
# Month names that are also ordinary words ("I may", "we march", "mar", "an
# august body"): in lower case they need a year or an unmistakable day.
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "august"})
_DAY = r"(?:3[01]|[12]\d|0?[1-9])"
_ORD = r"(?:st|nd|rd|th)"
_YEAR = r"(?:19|20)\d\d"

_ABS_RULES: list[tuple[str, str]] = [
    ("iso", r"(?P<iso_y>\d{4})-(?P<iso_m>\d\d)-(?P<iso_d>\d\d)"),
    ("theof", rf"(?:the\s+)?(?P<to_d>{_DAY}){_ORD}?\s+of\s+(?P<to_m>{_MONTH})"
              rf"(?:,?\s+(?P<to_y>{_YEAR}))?"),
    ("md", rf"(?P<md_m>{_MONTH})\s+(?P<md_d>{_DAY})(?P<md_s>{_ORD})?(?!\d)"
           rf"(?:,?\s+(?P<md_y>{_YEAR}))?"),
    ("dm", rf"(?P<dm_d>{_DAY})(?P<dm_s>{_ORD})?\s+(?P<dm_m>{_MONTH})"
           rf"(?:,?\s+(?P<dm_y>{_YEAR}))?"),
    ("part", rf"(?:(?:in|during)\s+)?(?:the\s+)?(?P<pt_p>early|mid|late)(?:\s*-\s*|\s+)"
             rf"(?P<pt_m>{_MONTH})(?:,?\s+(?:of\s+)?(?P<pt_y>{_YEAR}))?"),
    ("my", rf"(?:(?:in|during)\s+)?(?P<my_m>{_MONTH}),?\s+(?:of\s+)?(?P<my_y>{_YEAR})"),
    ("inm", rf"(?:in|during)\s+(?P<im_m>{_MONTH})"),
    ("iny", rf"(?:in|during|of)\s+(?P<iy_y>{_YEAR})(?!/)"),
    ("past", rf"the\s+(?:past|last)\s+(?:(?P<pa_n>{_NUM})\s+(?P<pa_u>day|week|month|year)s?"
             rf"|(?P<pa_q>couple|few)(?:\s+of)?\s+(?P<pa_qu>day|week|month|year)s"
             rf"|(?P<pa_u1>week|month|year))(?!\s+of\b)"),
]
_ABS_RE = _combine(_ABS_RULES, re.IGNORECASE)
_AFTER_WORD = re.compile(r"\s*\w")


def _month_num(token: str) -> int:
    return _MONTHS[token.rstrip(".")[:3].lower()]


def _ambiguous(token: str) -> bool:
    """A lower-case month name that is also an everyday word."""
    return token[0].islower() and token.rstrip(".").lower() in _AMBIGUOUS_MONTHS


def _latest_day(month: int, day: int, qday: date) -> date | None:
    """The most recent ``month``/``day`` not after ``qday`` (skips Feb 29 gaps)."""
    for year in range(qday.year, qday.year - 9, -1):
        try:
            d = date(year, month, day)
        except ValueError:
            continue
        if d <= qday:
            return d
    return None


def _month_range(year: int, month: int, part: str | None = None) -> tuple[date, date]:
    """First and last day of a month, or of its early/mid/late third."""
    first = date(year, month, 1)
    # monthrange, not relativedelta: this runs per message and is 10x cheaper.
    last = first.replace(day=calendar.monthrange(year, month)[1])
    # early/mid/late = days 1-10 / 11-20 / 21-end of the month.
    if part == "early":
        return first, first.replace(day=10)
    if part == "mid":
        return first.replace(day=11), first.replace(day=20)
    if part == "late":
        return first.replace(day=21), last
    return first, last


def _latest_month(month: int, qday: date, part: str | None = None) -> tuple[date, date]:
    """The most recent (part of) ``month`` that starts on or before ``qday``."""
    rng = _month_range(qday.year, month, part)
    return rng if rng[0] <= qday else _month_range(qday.year - 1, month, part)


def _day_range(m: re.Match[str], q: date, p: str, strong: bool) -> tuple[date, date] | None:
    """One day from a day+month match; ``p`` is the rule's group prefix."""
    token, year = m.group(p + "_m"), m.group(p + "_y")
    day = int(m.group(p + "_d"))
    if _ambiguous(token) and not strong and not year:
        return None
    month = _month_num(token)
    if year:
        d = date(int(year), month, day)
    else:
        found = _latest_day(month, day, q)
        if found is None:
            return None
        d = found
    return d, d


def _abs_range(text: str, m: re.Match[str], q: date) -> tuple[date, date] | None:
    kind = m.lastgroup
    if kind == "iso":
        d = date(int(m.group("iso_y")), int(m.group("iso_m")), int(m.group("iso_d")))
        return d, d
    if kind == "theof":
        return _day_range(m, q, "to", strong=True)
    if kind == "md":
        # Lower-case "may 5" only counts when nothing word-like follows
        # ("we march 5 miles" is not a date).
        strong = bool(m.group("md_s")) or not _AFTER_WORD.match(text, m.end())
        return _day_range(m, q, "md", strong)
    if kind == "dm":
        return _day_range(m, q, "dm", strong=bool(m.group("dm_s")))
    if kind in ("part", "my", "inm"):
        p = {"part": "pt", "my": "my", "inm": "im"}[kind]
        token = m.group(p + "_m")
        year = m.group(p + "_y") if kind != "inm" else None
        if _ambiguous(token) and not year:
            return None
        part = m.group("pt_p").lower() if kind == "part" else None
        month = _month_num(token)
        return _month_range(int(year), month, part) if year else _latest_month(month, q, part)
    if kind == "iny":
        y = int(m.group("iy_y"))
        return date(y, 1, 1), date(y, 12, 31)
    if kind == "past":
        if m.group("pa_u1"):
            n, unit = 1, m.group("pa_u1")
        elif m.group("pa_q"):
            # "the past few weeks" takes the upper end of the vague spans.
            n, unit = _VAGUE[m.group("pa_q").lower()][1], m.group("pa_qu")
        else:
            n, unit = _num(m.group("pa_n")), m.group("pa_u")
        if n == 0:
            return None
        unit = unit.lower()
        if unit in ("day", "week"):
            return q - timedelta(days=n * (7 if unit == "week" else 1)), q
        back = relativedelta(months=n) if unit == "month" else relativedelta(years=n)
        return q - back, q
    return None  # pragma: no cover


def question_ranges(question: str, question_day: date) -> list[tuple[date, date]]:
    """Inclusive day ranges a question refers to, de-duplicated, in order of appearance.

    Combines :func:`resolve_relative` (anchored at ``question_day``) with
    absolute mentions (``2023-05-01``, ``May 5th``, ``in May``, ``mid-May``,
    ``in 2023``, ``the past two weeks``).  A date without a year is the most
    recent one not after ``question_day``.
    """
    q = _as_date(question_day)
    cands: list[tuple[int, int, tuple[date, date]]] = []
    if not question:
        return []
    cands += [(s, e, (r.start, r.end)) for s, e, r in _rel_candidates(question, q)]
    for m in _ABS_RE.finditer(question):
        try:
            rng = _abs_range(question, m, q)
        except (ValueError, OverflowError):  # "2023-02-30", "the past 999 years"
            continue
        if rng is not None:
            cands.append((m.start(), m.end(), rng))
    # Where a relative and an absolute match overlap, the earlier (then the
    # longer) one wins: "the last week" is a rolling span, not "last week".
    cands.sort(key=lambda c: (c[0], -c[1]))
    out: list[tuple[date, date]] = []
    reach = -1
    for s, e, rng in cands:
        if s < reach:
            continue
        reach = e
        if rng not in out:
            out.append(rng)
    return out
