"""Readers and the writer for the files memstore imports and exports.

Two formats are read:

* **memstore JSONL** (the contract): one session per line,
  ``{"scope", "session", "date", "title"?, "meta"?, "turns": [{"role",
  "content", "author"?, "date"?, "tags"?}]}``.
* **LongMemEval** (a JSON array of questions, optionally ``.gz``/``.xz``): one
  scope per ``question_id``, sessions keyed by ``haystack_session_ids`` and
  dated by ``haystack_dates``.  Benchmark labels (``has_answer``, answers,
  the question itself) are not read into the memory.

Readers validate everything and raise :class:`InputError` naming the file,
the line (or question) and the field, so a caller can abort an import before
anything is committed.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .dates import parse_iso
from .errors import DateFormatError, InputError
from .models import ROLES, Turn

FORMATS = ("jsonl", "longmemeval")

_SESSION_KEYS = {"scope", "session", "date", "title", "meta", "turns"}
_TURN_KEYS = {"role", "content", "author", "date", "tags"}


@dataclass
class SessionRecord:
    """One session read from a file, validated and with dates normalised."""

    scope: str
    key: str
    started_at: str
    turns: list[tuple[int, Turn]]  # (turn index, turn); indices may skip dropped empty turns
    title: str | None = None
    meta: dict[str, Any] | None = None
    skipped_empty: int = 0
    where: str = field(default="", compare=False)

    def digest(self, content_hashes: list[str]) -> str:
        """A hash of everything stored for this session, to skip unchanged re-imports.

        ``content_hashes`` are the turns' content hashes (computed anyway for
        the items), so no text is hashed twice.  Fields are length-prefixed.
        """

        def field(value: object) -> str:
            return "\x00" if value is None else f"{len(str(value))}:{value}"

        meta = None if self.meta is None else json.dumps(self.meta, ensure_ascii=False, sort_keys=True)
        head = "".join(field(v) for v in (self.key, self.started_at, self.title, meta))
        body = "".join(
            f"{i}|{t.role}|{h}|{field(t.author)}{field(t.at)}{field(chr(31).join(t.tags))}"
            for (i, t), h in zip(self.turns, content_hashes)
        )
        return hashlib.sha256((head + body).encode("utf-8", "surrogatepass")).hexdigest()


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading, decompressing ``.gz`` and ``.xz`` transparently."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a file to import")
    name = path.name.lower()
    try:
        if name.endswith(".gz"):
            return gzip.open(path, "rb")
        if name.endswith(".xz"):
            return lzma.open(path, "rb")
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def detect_format(path: Path) -> str:
    """Guess the format from the first non-blank byte: ``[`` is LongMemEval, ``{`` is JSONL."""
    with open_binary(path) as fh:
        try:
            head = fh.read(4096)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise InputError(f"{path}: cannot read: {exc}") from None
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise InputError(f"{path}: the file is empty")
    if stripped[:1] == b"[":
        return "longmemeval"
    if stripped[:1] == b"{":
        return "jsonl"
    raise InputError(f"{path}: not a memstore JSONL or LongMemEval JSON file (it starts with {stripped[:20]!r})")


def read_sessions(path: str | Path, fmt: str | None = None) -> Iterator[SessionRecord]:
    """Yield every session in ``path``, validated.  ``fmt`` is detected when None."""
    p = Path(path)
    fmt = fmt or detect_format(p)
    if fmt == "jsonl":
        yield from _read_jsonl(p)
    elif fmt == "longmemeval":
        yield from _read_longmemeval(p)
    else:
        raise InputError(f"unknown format {fmt!r}; use one of: {', '.join(FORMATS)}")


# --- memstore JSONL -------------------------------------------------------


def _read_jsonl(path: Path) -> Iterator[SessionRecord]:
    n_sessions = 0
    with open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                where = f"{path}:{lineno}"
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"{where}: invalid UTF-8 at byte {exc.start}") from None
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
                n_sessions += 1
                yield _jsonl_session(obj, where)
        except (EOFError, lzma.LZMAError, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: the compressed file is damaged ({exc})") from None
    if n_sessions == 0:
        raise InputError(f"{path}: the file is empty (no sessions)")


def _jsonl_session(obj: Any, where: str) -> SessionRecord:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a line must be a JSON object (one session)")
    unknown = set(obj) - _SESSION_KEYS
    if unknown:
        raise InputError(
            f"{where}: unknown field {sorted(unknown)[0]!r}; a session has {', '.join(sorted(_SESSION_KEYS))}"
        )
    scope = _text_field(obj, "scope", where)
    key = _text_field(obj, "session", where)
    started_at = _date_field(obj, "date", where)
    title = _text_field(obj, "title", where, required=False)
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise InputError(f"{where}: meta must be a JSON object")
    turns_raw = obj.get("turns")
    if not isinstance(turns_raw, list):
        raise InputError(f"{where}: turns must be a list of turns" + ("" if "turns" in obj else " (missing)"))
    turns = [(i, _jsonl_turn(t, f"{where}: turns[{i}]", started_at)) for i, t in enumerate(turns_raw)]
    return SessionRecord(scope, key, started_at, turns, title=title, meta=meta, where=where)


def _jsonl_turn(obj: Any, where: str, session_at: str) -> Turn:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a turn must be a JSON object")
    unknown = set(obj) - _TURN_KEYS
    if unknown:
        raise InputError(f"{where}: unknown field {sorted(unknown)[0]!r}; a turn has {', '.join(sorted(_TURN_KEYS))}")
    role = _role(obj.get("role"), where)
    content = _text_field(obj, "content", where)
    author = _text_field(obj, "author", where, required=False)
    at = _date_field(obj, "date", where, required=False) or session_at
    tags_raw = obj.get("tags", [])
    if not isinstance(tags_raw, list) or not all(isinstance(t, str) and t.strip() for t in tags_raw):
        raise InputError(f"{where}: tags must be a list of non-empty strings")
    return Turn(role=role, content=content, author=author, at=at, tags=normalise_tags(tags_raw))


def normalise_tags(tags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case, strip and de-duplicate tags, keeping their order."""
    return tuple(dict.fromkeys(t.strip().lower() for t in tags if t.strip()))


def _role(value: Any, where: str) -> str:
    if value not in ROLES:
        shown = "missing" if value is None else repr(value)
        raise InputError(f"{where}: role is {shown}; use one of: {', '.join(ROLES)}")
    return str(value)


def _text_field(obj: dict[str, Any], name: str, where: str, *, required: bool = True) -> Any:
    value = obj.get(name)
    if value is None:
        if required:
            raise InputError(f"{where}: {name} is missing")
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: {name} must be a string, not {type(value).__name__}")
    check_text(value, f"{where}: {name}")
    return value


def check_text(value: str, where: str) -> None:
    """Refuse text SQLite or FTS5 would mangle: empty, NUL characters, lone surrogates."""
    if not value.strip():
        raise InputError(f"{where} is empty")
    if "\x00" in value:
        raise InputError(f"{where} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{where} is not valid Unicode (a lone surrogate escape)") from None


def _date_field(obj: dict[str, Any], name: str, where: str, *, required: bool = True) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise InputError(f"{where}: {name} is missing")
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: {name} must be a date string, not {type(value).__name__}")
    try:
        return parse_iso(value)
    except DateFormatError as exc:
        raise InputError(f"{where}: {name}: {exc}") from None


# --- LongMemEval ----------------------------------------------------------


def _read_longmemeval(path: Path) -> Iterator[SessionRecord]:
    with open_binary(path) as fh:
        try:
            data = json.load(io.TextIOWrapper(fh, encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: invalid UTF-8 at byte {exc.start}") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        except (EOFError, lzma.LZMAError, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: the compressed file is damaged ({exc})") from None
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: a LongMemEval file is a non-empty JSON array of questions")
    for qi, q in enumerate(data):
        yield from longmemeval_sessions(q, f"{path}: question {qi}")


def longmemeval_sessions(q: Any, where: str) -> Iterator[SessionRecord]:
    """The sessions of one LongMemEval question, as one scope named by its ``question_id``."""
    if not isinstance(q, dict):
        raise InputError(f"{where}: a question must be a JSON object")
    qid = q.get("question_id")
    if not isinstance(qid, str) or not qid:
        raise InputError(f"{where}: question_id is missing or not a string")
    where = f"{where} ({qid})"
    ids, dates, sessions = (q.get(k) for k in ("haystack_session_ids", "haystack_dates", "haystack_sessions"))
    for name, value in (("haystack_session_ids", ids), ("haystack_dates", dates), ("haystack_sessions", sessions)):
        if not isinstance(value, list):
            raise InputError(f"{where}: {name} is missing or not a list")
    assert isinstance(ids, list) and isinstance(dates, list) and isinstance(sessions, list)
    if not len(ids) == len(dates) == len(sessions):
        raise InputError(f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in length")
    for si, (key, date, turns_raw) in enumerate(zip(ids, dates, sessions)):
        swhere = f"{where}: session {si}"
        if not isinstance(key, str) or not key:
            raise InputError(f"{swhere}: haystack_session_ids[{si}] must be a non-empty string")
        if not isinstance(date, str):
            raise InputError(f"{swhere}: haystack_dates[{si}] must be a date string")
        try:
            started_at = parse_iso(date)
        except DateFormatError as exc:
            raise InputError(f"{swhere}: haystack_dates[{si}]: {exc}") from None
        if not isinstance(turns_raw, list):
            raise InputError(f"{swhere}: haystack_sessions[{si}] must be a list of turns")
        turns: list[tuple[int, Turn]] = []
        skipped = 0
        for ti, t in enumerate(turns_raw):
            twhere = f"{swhere}: turn {ti}"
            if not isinstance(t, dict):
                raise InputError(f"{twhere}: a turn must be a JSON object")
            role = _role(t.get("role"), twhere)
            content = t.get("content")
            if not isinstance(content, str):
                raise InputError(f"{twhere}: content must be a string")
            if not content.strip():
                # The published data has a few empty turns; skipping them keeps
                # the others' indices, so references still match the source.
                skipped += 1
                continue
            check_text(content, f"{twhere}: content")
            turns.append((ti, Turn(role=role, content=content, at=started_at)))
        yield SessionRecord(qid, key, started_at, turns, skipped_empty=skipped, where=swhere)


# --- export ---------------------------------------------------------------


def session_json(
    scope: str,
    key: str,
    started_at: str,
    title: str | None,
    meta: dict[str, Any] | None,
    turns: list[Turn],
) -> str:
    """One line of memstore JSONL, in a canonical form (so exports diff cleanly)."""
    obj: dict[str, Any] = {"scope": scope, "session": key, "date": started_at}
    if title is not None:
        obj["title"] = title
    if meta is not None:
        obj["meta"] = meta
    out_turns = []
    for t in turns:
        ot: dict[str, Any] = {"role": t.role, "content": t.content}
        if t.author is not None:
            ot["author"] = t.author
        if t.at is not None and t.at != started_at:
            ot["date"] = t.at
        if t.tags:
            ot["tags"] = list(t.tags)
        out_turns.append(ot)
    obj["turns"] = out_turns
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
