"""The memory text: what an answering model reads for one question.

:func:`build_memory` follows the "every user message" design and extends it to
any budget:

1. A header with the question date, and a warning when every session has the
   same date (the dates then say nothing about when things happened).
2. The user log: every user message verbatim, by session in date order, each
   session headed by its date and its distance from the question, with a line
   after any message whose relative dates ("last weekend") resolve to days.
3. The assistant replies that fused retrieval ranks highest, under their own
   byte budget.

When the whole log does not fit its share of the budget (long histories,
small budgets), user messages are *selected*, not cut blindly: by fused
relevance, by the dates the question mentions, and by recency.  Sessions left
out get a one-line stub (or, when even stubs do not fit, a line per run of
omitted sessions), and a message is never cut without a visible mark.

The builder calls no model (only the embedding model, for the query) and is
deterministic: the same store, question and date give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from .dates import as_of_bound, date_note, describe_distance, format_day, labelled_time, question_ranges
from .errors import UsageError
from .fuse import rrf
from .legs import Filters
from .models import ItemRef
from .retrieve import DEFAULT_WEIGHTS, Ranking, Weights, rank
from .rules import asks_for_recall

if TYPE_CHECKING:
    from .store import Store

#: The seed's budgets, in bytes of UTF-8.
DEFAULT_BUDGET = 180_000
DEFAULT_REPLY_BUDGET = 96_000
#: The whole-session view's budget, and its cut per message (characters).
SESSION_VIEW_BUDGET = 100_000
SESSION_VIEW_MESSAGE_CHARS = 12_000
#: The baseline memory: the top turns of one ranking, within a byte budget.
BASELINE_TURNS = 100
BASELINE_BUDGET = 96_000

#: Share of the budget kept for assistant replies when the user log must be
#: selected, and the larger share when the question asks about what the
#: assistant said (see the budget sweep in the README).
REPLY_SHARE = 0.05
RECALL_REPLY_SHARE = 0.6
#: Share of the log's budget that stubs for omitted sessions may take.
STUB_SHARE = 0.10
#: Weights for ordering user messages when they must be selected.
SELECT_WEIGHTS = {"relevance": 1.0, "dates": 1.0, "recency": 0.25}

#: The best-ranked replies that may go in cut when they do not fit whole,
#: and the least room worth cutting one into.
TOP_REPLIES_CUT = 2
MIN_CUT_REPLY = 1_000

CUT_MARK = " [… cut: {n:,} more bytes]"


@dataclass(frozen=True)
class ManifestEntry:
    """One item in a memory text; ``partial`` when it was cut (and marked)."""

    ref: ItemRef
    partial: bool = False

    def to_json(self) -> dict[str, Any]:
        out = self.ref.to_json()
        if self.partial:
            out["partial"] = True
        return out


@dataclass(frozen=True)
class Section:
    """One section of a memory text: its size and the items it holds."""

    name: str
    bytes: int
    items: tuple[ManifestEntry, ...] = ()
    sessions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bytes": self.bytes, "items": [e.to_json() for e in self.items]}
        if self.sessions:
            out["sessions"] = list(self.sessions)
        return out


@dataclass(frozen=True)
class Memory:
    """A memory text and its manifest."""

    question: str
    scope: str
    date: str
    budget: int
    reply_budget: int
    mode: str
    text: str
    sections: dict[str, Section] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    def refs(self, *, whole: bool = True) -> set[ItemRef]:
        """The items the text holds (only uncut ones when ``whole``)."""
        return {e.ref for s in self.sections.values() for e in s.items if not (whole and e.partial)}

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "scope": self.scope,
            "date": self.date,
            "budget": self.budget,
            "reply_budget": self.reply_budget,
            "mode": self.mode,
            "bytes": self.bytes,
            "manifest": {name: s.to_json() for name, s in self.sections.items()},
            "text": self.text,
        }


# -- loading a scope --------------------------------------------------------


@dataclass
class _Item:
    id: int
    session: int  # index into _Scope.sessions
    seq: int
    role: str
    at: str
    content: str


@dataclass
class _Session:
    key: str
    started_at: str
    day: date
    items: list[_Item] = field(default_factory=list)


@dataclass
class _Scope:
    sessions: list[_Session]
    items: dict[int, _Item]


def _load_scope(store: Store, scope_id: int, bound: str) -> _Scope:
    rows = store.conn.execute(
        """SELECT se.key, se.started_at, i.id, i.seq, i.role, i.at, i.content
           FROM sessions se JOIN items i ON i.session_id = se.id
           WHERE se.scope_id = ? AND i.at <= ?
           ORDER BY se.started_at, se.key, i.seq""",
        (scope_id, bound),
    )
    sessions: list[_Session] = []
    items: dict[int, _Item] = {}
    index: dict[str, int] = {}
    for key, started_at, item_id, seq, role, at, content in rows:
        si = index.get(key)
        if si is None:
            si = index[key] = len(sessions)
            sessions.append(_Session(key, started_at, date.fromisoformat(started_at[:10])))
        it = _Item(item_id, si, seq, role, at, content)
        sessions[si].items.append(it)
        items[item_id] = it
    return _Scope(sessions, items)


@dataclass
class _Context:
    """What every view of a question starts from: its date, the scope's items and their ranking."""

    label: str
    qday: date
    bound: str
    scope_id: int
    data: _Scope
    ranking: Ranking


def _context(
    store: Store,
    question: str,
    *,
    scope: str,
    asked: str | None,
    mode: str,
    weights: Weights,
    query_vector: bytes | None,
    feedback: bool,
) -> _Context:
    """Check the question, read the scope as known on the day it is ``asked``, and rank all of it."""
    if not isinstance(question, str) or not question.strip():
        raise UsageError("the question is empty")
    if asked is None:
        label, qday, bound = "an unknown date", date.max, "9999-12-31T23:59:59"
    else:
        when, label = labelled_time(asked)
        qday = when.date()
        bound = as_of_bound(qday.isoformat())
    scope_id = store.scope_id(scope)
    data = _load_scope(store, scope_id, bound)
    ranking = rank(
        store,
        question,
        Filters(scope_id=scope_id, as_of=bound),
        mode=mode,
        weights=weights,
        candidates=max(len(data.items), 1),
        query_vector=query_vector,
        feedback=feedback,
    )
    return _Context(label, qday, bound, scope_id, data, ranking)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes, with a visible mark."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    mark = CUT_MARK.format(n=len(raw))  # an upper bound on the mark's own length
    keep = max(max_bytes - _utf8(mark), 0)
    head = raw[:keep].decode("utf-8", errors="ignore")
    rest = len(raw) - _utf8(head)
    return head + CUT_MARK.format(n=rest), True


# -- rendering ----------------------------------------------------------------


def _session_heading(s: _Session, qday: date) -> str:
    time = s.started_at[11:16]
    return f"### {format_day(s.day)} {time}, {describe_distance(s.day, qday)}\n"


def _message(it: _Item, s: _Session, max_bytes: int | None = None, notes: bool = True) -> tuple[str, bool]:
    """A message as a list entry, with its date line; cut (marked) to ``max_bytes`` when given."""
    note = date_note(it.content, date.fromisoformat(it.at[:10])) if notes else None
    note_line = f"  {note}\n" if note else ""
    body, partial = it.content, False
    if max_bytes is not None:
        room = max_bytes - _utf8(note_line) - 3
        body, partial = _cut(body, max(room, 64))
    return f"- {body}\n{note_line}", partial


def _header(label: str, all_same_day: date | None, n_sessions: int, *, complete: bool = True) -> str:
    log = (
        "every message the user wrote, verbatim"
        if complete
        else "the user's messages that matter most here, verbatim (what is left out is marked)"
    )
    lines = [
        f"# Memory for a question asked on {label}",
        f"Below: {log}, by session, oldest first; then the assistant replies that look most relevant to the "
        "question. Each session shows its date and its distance from the question; a [dates: …] line under a "
        "message gives the calendar days its relative dates refer to.",
    ]
    if all_same_day is not None and n_sessions > 1:
        lines.append(
            f"Note: every session is dated {format_day(all_same_day)}, so session dates say nothing about when "
            "things happened; date events from what the messages themselves say."
        )
    return "\n".join(lines) + "\n\n"


# -- the builder -----------------------------------------------------------------


def build_memory(
    store: Store,
    question: str,
    *,
    scope: str,
    date: str,
    budget: int = DEFAULT_BUDGET,
    reply_budget: int = DEFAULT_REPLY_BUDGET,
    mode: str = "fused",
    weights: Weights = DEFAULT_WEIGHTS,
    reply_share: float = REPLY_SHARE,
    select_weights: dict[str, float] | None = None,
    query_vector: bytes | None = None,
    feedback: bool = False,
) -> Memory:
    """Build the memory text for ``question``, asked on ``date``, within ``budget`` bytes.

    ``date`` may carry a time; the whole day counts as known (items dated
    later that day are included).  ``reply_budget`` caps the assistant replies.
    ``mode``, ``weights`` and ``feedback`` choose the ranking (see
    :func:`memstore.retrieve.rank`) that orders replies, and user messages
    when the log must be selected.  Feedback is off by default here: on
    LongMemEval-S it lowered coverage at 16 KB (92.7% against 93.1%; replies
    the question asks for fell from 94.6% to 91.1%), and it costs a second
    pass over the whole scope.
    """
    if budget <= 0 or reply_budget < 0:
        raise UsageError("budgets must be positive")
    ctx = _context(store, question, scope=scope, asked=date, mode=mode, weights=weights,
                   query_vector=query_vector, feedback=feedback)
    data, qday, label = ctx.data, ctx.qday, ctx.label
    days = {s.day for s in data.sessions}
    same_day = next(iter(days)) if len(days) == 1 else None
    # The header says whether the log is complete, which is known only later;
    # room is reckoned with the longer wording.
    header = _header(label, same_day, len(data.sessions), complete=False)
    room = budget - _utf8(header)
    if room < 0:
        raise UsageError(f"a budget of {budget:,} bytes is smaller than the memory's header ({_utf8(header):,} bytes)")

    ranked = [f.id for f in ctx.ranking.fused if f.id in data.items]
    user_ranked = [i for i in ranked if data.items[i].role == "user"]
    reply_ranked = [i for i in ranked if data.items[i].role == "assistant"]
    # Replies no leg matched (BM25 alone matches few) follow, newest first.
    matched = set(reply_ranked)
    reply_ranked += [
        it.id
        for it in sorted(data.items.values(), key=lambda it: (it.at, it.id), reverse=True)
        if it.role == "assistant" and it.id not in matched
    ]

    log_title = "## The user's messages\n"
    full_log = _render_full_log(data, qday)
    full_log_bytes = _utf8(log_title) + sum(_utf8(b) for _, b in full_log)
    if asks_for_recall(question):
        reply_share = max(reply_share, RECALL_REPLY_SHARE)
    reply_reserve = min(reply_budget, int(budget * reply_share)) if reply_ranked else 0
    log_cap = room - reply_reserve
    complete = full_log_bytes <= log_cap or not full_log
    if complete:
        header = _header(label, same_day, len(data.sessions))
        log_text = log_title + "".join(b for _, b in full_log) if full_log else log_title + "(none)\n"
        log_entries = [ManifestEntry(ItemRef(data.sessions[it.session].key, it.seq)) for it, _ in full_log]
        stub_keys: list[str] = []
    else:
        order = _selection_order(data, user_ranked, question, qday, select_weights or SELECT_WEIGHTS)
        log_text, log_entries, stub_keys = _select_log(data, order, qday, log_cap - _utf8(log_title))
        log_text = log_title + log_text
    reply_room = min(reply_budget, room - _utf8(log_text))
    reply_text, reply_entries = _select_replies(data, reply_ranked, qday, reply_room)

    text = header + log_text + reply_text
    return Memory(
        question=question,
        scope=scope,
        date=date,
        budget=budget,
        reply_budget=reply_budget,
        mode=ctx.ranking.mode,
        text=text,
        sections={
            "header": Section("header", _utf8(header)),
            "user_log": Section("user_log", _utf8(log_text), tuple(log_entries), tuple(stub_keys)),
            "replies": Section("replies", _utf8(reply_text), tuple(reply_entries)),
        },
    )


def _render_full_log(data: _Scope, qday: date) -> list[tuple[_Item, str]]:
    """Every user message, rendered; the session heading rides on its first message."""
    out: list[tuple[_Item, str]] = []
    for s in data.sessions:
        first = True
        for it in s.items:
            if it.role != "user":
                continue
            block, _ = _message(it, s)
            if first:
                block = _session_heading(s, qday) + block
                first = False
            out.append((it, block))
    return out


def _selection_order(
    data: _Scope, user_ranked: list[int], question: str, qday: date, weights: dict[str, float]
) -> list[int]:
    """User messages in the order they should be kept when not all fit."""
    users = [it for s in data.sessions for it in s.items if it.role == "user"]
    ranges = question_ranges(question, qday)
    in_range = [
        it.id
        for it in sorted(users, key=lambda it: it.at, reverse=True)
        if any(lo <= data.sessions[it.session].day <= hi for lo, hi in ranges)
    ]
    recency = [it.id for it in sorted(users, key=lambda it: (it.at, it.session, it.seq), reverse=True)]
    fused = rrf({"relevance": user_ranked, "dates": in_range, "recency": recency}, weights)
    order = [f.id for f in fused]
    seen = set(order)
    return order + [it.id for it in users if it.id not in seen]


def _select_log(data: _Scope, order: list[int], qday: date, cap: int) -> tuple[str, list[ManifestEntry], list[str]]:
    """Choose user messages within ``cap`` bytes; render them by session with stubs for the rest.

    Messages are taken in ``order`` while they fit.  The cost of a message is
    exact: how much it grows its session's rendering (heading and "not shown"
    marks included), so no byte of the budget is held back on a guess.
    """
    cap = max(cap, 0)
    user_sessions = [si for si, s in enumerate(data.sessions) if any(it.role == "user" for it in s.items)]
    stubs = {si: _stub(data.sessions[si]) for si in user_sessions}
    stub_reserve = min(sum(_utf8(t) for t in stubs.values()), int(cap * STUB_SHARE))
    avail = cap - stub_reserve
    max_message = max(cap // 4, 600)
    blocks: dict[int, tuple[str, bool]] = {}  # item id -> (rendered, partial), for chosen items
    chosen: dict[int, set[int]] = {}  # session index -> chosen item ids
    sizes: dict[int, int] = {}  # session index -> bytes of its rendering
    used = 0
    for item_id in order:
        it = data.items[item_id]
        s = data.sessions[it.session]
        blocks[item_id] = _message(it, s, max_message)
        ids = chosen.get(it.session, set()) | {item_id}
        size = _utf8(_render_session(s, ids, blocks, qday))
        if used + size - sizes.get(it.session, 0) > avail:
            del blocks[item_id]
            continue
        used += size - sizes.get(it.session, 0)
        chosen[it.session] = ids
        sizes[it.session] = size
    omitted = [si for si in user_sessions if si not in chosen]
    stub_text = _stub_block(data, omitted, stubs, cap - used)
    parts = [_render_session(data.sessions[si], chosen[si], blocks, qday) for si in sorted(chosen)]
    entries = [
        ManifestEntry(ItemRef(data.sessions[si].key, it.seq), blocks[it.id][1])
        for si in sorted(chosen)
        for it in data.sessions[si].items
        if it.id in chosen[si]
    ]
    keys = [data.sessions[si].key for si in omitted] if stub_text else []
    return "".join(parts) + stub_text, entries, keys


def _render_session(s: _Session, ids: set[int], blocks: dict[int, tuple[str, bool]], qday: date) -> str:
    """A session's heading and its chosen user messages, with a mark for each run left out."""
    parts = [_session_heading(s, qday)]
    skipped = 0
    for it in s.items:
        if it.role != "user":
            continue
        if it.id in ids:
            if skipped:
                parts.append(_skip_mark(skipped))
                skipped = 0
            parts.append(blocks[it.id][0])
        else:
            skipped += 1
    if skipped:
        parts.append(_skip_mark(skipped))
    return "".join(parts)


def _skip_mark(n: int) -> str:
    return f"  [… {n} message{'s' if n > 1 else ''} not shown]\n"


def _stub(s: _Session) -> str:
    first = next((it.content for it in s.items if it.role == "user"), "")
    words = " ".join(first.split()[:12])
    return f"- {format_day(s.day)}: {words}…\n"


def _stub_block(data: _Scope, omitted: list[int], stubs: dict[int, str], room: int) -> str:
    """Stubs for omitted sessions, or one line per run of them when stubs do not fit."""
    if not omitted:
        return ""
    title = f"## {len(omitted)} session{'s' if len(omitted) > 1 else ''} not shown (date and first words)\n"
    full = title + "".join(stubs[si] for si in omitted)
    if _utf8(full) <= room:
        return full
    runs: list[list[int]] = []
    for si in omitted:
        if runs and runs[-1][-1] == si - 1:
            runs[-1].append(si)
        else:
            runs.append([si])
    lines = [
        f"- {format_day(data.sessions[r[0]].day)} to {format_day(data.sessions[r[-1]].day)}: {len(r)} sessions\n"
        if len(r) > 1
        else f"- {format_day(data.sessions[r[0]].day)}: 1 session\n"
        for r in runs
    ]
    grouped = f"## {len(omitted)} sessions not shown\n" + "".join(lines)
    if _utf8(grouped) <= room:
        return grouped
    first, last = data.sessions[omitted[0]].day, data.sessions[omitted[-1]].day
    one = f"## {len(omitted)} sessions between {format_day(first)} and {format_day(last)} not shown\n"
    return one if _utf8(one) <= room else ""


def _select_replies(data: _Scope, ranked: list[int], qday: date, room: int) -> tuple[str, list[ManifestEntry]]:
    """Assistant replies in rank order while they fit, shown by session date."""
    title = "\n## Assistant replies most relevant to the question\n"
    room -= _utf8(title)
    if room <= 0 or not ranked:
        return "", []
    chosen: dict[int, tuple[str, bool]] = {}
    opened: set[int] = set()
    used = 0

    def cost_of(it: _Item, block: str) -> int:
        heading = 0 if it.session in opened else _utf8(_session_heading(data.sessions[it.session], qday))
        return heading + _utf8(block)

    skipped_top: list[int] = []
    for position, item_id in enumerate(ranked):
        it = data.items[item_id]
        block, partial = _message(it, data.sessions[it.session], notes=False)
        cost = cost_of(it, block)
        if used + cost > room:
            if position < TOP_REPLIES_CUT:
                skipped_top.append(item_id)
            continue
        chosen[item_id] = (block, partial)
        opened.add(it.session)
        used += cost
    # Replies go in whole.  Only then may the room left hold the first part of
    # a best-ranked reply too long to fit (cut, and marked).
    for item_id in skipped_top:
        it = data.items[item_id]
        s = data.sessions[it.session]
        heading = cost_of(it, "")
        if room - used - heading < MIN_CUT_REPLY:
            break
        block, partial = _message(it, s, room - used - heading, notes=False)
        cost = cost_of(it, block)
        if used + cost <= room:
            chosen[item_id] = (block, partial)
            opened.add(it.session)
            used += cost
    if not chosen:
        return "", []
    parts = [title]
    entries: list[ManifestEntry] = []
    for si, s in enumerate(data.sessions):
        if si not in opened:
            continue
        parts.append(_session_heading(s, qday))
        for it in s.items:
            if it.id in chosen:
                block, partial = chosen[it.id]
                parts.append(block)
                entries.append(ManifestEntry(ItemRef(s.key, it.seq), partial))
    return "".join(parts), entries


# -- views for a second read ---------------------------------------------------


@dataclass(frozen=True)
class SessionView:
    """Whole sessions, verbatim, chosen for a question."""

    question: str
    scope: str
    date: str
    text: str
    sessions: tuple[str, ...]
    items: tuple[ManifestEntry, ...]

    @property
    def bytes(self) -> int:
        return _utf8(self.text)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "scope": self.scope,
            "date": self.date,
            "bytes": self.bytes,
            "sessions": list(self.sessions),
            "items": [e.to_json() for e in self.items],
            "text": self.text,
        }


def build_sessions_view(
    store: Store,
    question: str,
    *,
    scope: str,
    date: str,
    budget: int = SESSION_VIEW_BUDGET,
    message_chars: int = SESSION_VIEW_MESSAGE_CHARS,
    mode: str = "fused",
    weights: Weights = DEFAULT_WEIGHTS,
    query_vector: bytes | None = None,
    feedback: bool = False,
) -> SessionView:
    """Whole sessions (user and assistant, verbatim) for a second read, within ``budget`` bytes.

    Sessions are chosen first by the dates the question mentions, then by
    how many of the question's content words they contain, then by
    retrieval rank; they are shown oldest first.  Each message is cut at
    ``message_chars`` characters, with a mark.
    """
    ctx = _context(store, question, scope=scope, asked=date, mode=mode, weights=weights,
                   query_vector=query_vector, feedback=feedback)
    data, qday, label, ranking = ctx.data, ctx.qday, ctx.label, ctx.ranking
    session_rank: dict[int, int] = {}
    for f in ranking.fused:
        it = data.items.get(f.id)
        if it is not None and it.session not in session_rank:
            session_rank[it.session] = len(session_rank)
    ranges = question_ranges(question, qday)
    words = set(ranking.terms.words)
    stems = _session_word_hits(store, ctx.scope_id, ctx.bound, ranking.terms.words)

    def key(si: int) -> tuple[int, int, int]:
        s = data.sessions[si]
        dated = any(lo <= s.day <= hi for lo, hi in ranges)
        return (0 if dated else 1, -len(stems.get(s.key, set()) & words), session_rank.get(si, len(data.sessions)))

    header = f"# Whole sessions for a second read, for a question asked on {label}\n\n"
    used = _utf8(header)
    blocks: dict[int, tuple[str, list[ManifestEntry]]] = {}
    for si in sorted(range(len(data.sessions)), key=key):
        s = data.sessions[si]
        lines = [_session_heading(s, qday)]
        entries = []
        for it in s.items:
            body = it.content
            if len(body) > message_chars:
                body = body[:message_chars] + CUT_MARK.format(n=_utf8(body[message_chars:]))
            lines.append(f"{it.role}: {body}\n")
            entries.append(ManifestEntry(ItemRef(s.key, it.seq), len(it.content) > message_chars))
        block = "".join(lines) + "\n"
        if used + _utf8(block) > budget:
            continue
        blocks[si] = (block, entries)
        used += _utf8(block)
    chosen = sorted(blocks)
    return SessionView(
        question=question,
        scope=scope,
        date=date,
        text=header + "".join(blocks[si][0] for si in chosen),
        sessions=tuple(data.sessions[si].key for si in chosen),
        items=tuple(e for si in chosen for e in blocks[si][1]),
    )


def _session_word_hits(store: Store, scope_id: int, bound: str, words: Iterable[str]) -> dict[str, set[str]]:
    """For each session, which of ``words`` it contains (FTS5, so stems match)."""
    from .query import fts_match

    out: dict[str, set[str]] = {}
    for w in words:
        rows = store.conn.execute(
            """SELECT DISTINCT se.key FROM items_fts CROSS JOIN items i ON i.id = items_fts.rowid
               JOIN sessions se ON se.id = i.session_id
               WHERE items_fts MATCH ? AND i.at <= ?""",
            (fts_match((w,), scope_id), bound),
        )
        for (key,) in rows:
            out.setdefault(key, set()).add(w)
    return out


def build_baseline(
    store: Store,
    question: str,
    *,
    scope: str,
    date: str | None = None,
    mode: str = "bm25",
    weights: Weights = DEFAULT_WEIGHTS,
    turns: int = BASELINE_TURNS,
    budget: int = BASELINE_BUDGET,
    query_vector: bytes | None = None,
    feedback: bool = False,
) -> Memory:
    """The seed's baseline memory: the top ``turns`` turns of one ranking, within ``budget`` bytes.

    Turns of both roles, in rank order while they fit, each with its
    session's date; shown in rank order.
    """
    ctx = _context(store, question, scope=scope, asked=date, mode=mode, weights=weights,
                   query_vector=query_vector, feedback=feedback)
    data, ranking = ctx.data, ctx.ranking
    header = f"# The {turns} turns that best match a question asked on {ctx.label}\n\n"
    used = _utf8(header)
    parts = [header]
    entries: list[ManifestEntry] = []
    for f in ranking.fused:
        if len(entries) >= turns:
            break
        it = data.items.get(f.id)
        if it is None:
            continue
        s = data.sessions[it.session]
        block = f"[{format_day(s.day)} {s.started_at[11:16]}] {it.role}: {it.content}\n\n"
        if used + _utf8(block) > budget:
            continue
        parts.append(block)
        used += _utf8(block)
        entries.append(ManifestEntry(ItemRef(s.key, it.seq)))
    text = "".join(parts)
    return Memory(
        question=question,
        scope=scope,
        date=date or "",
        budget=budget,
        reply_budget=0,
        mode=ranking.mode,
        text=text,
        sections={"turns": Section("turns", _utf8(text) - _utf8(header), tuple(entries))},
    )
