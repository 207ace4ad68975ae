"""Answering: a chat model reads the memory text, and rules pick answers for a second read.

The flow follows the "every user message" pipeline:

1. :func:`memstore.memory.build_memory` builds the memory text, and one call
   to a chat model answers from it (``first``).
2. Rules that see only the question or the current answer choose a second
   read, in this order; each new answer replaces the one before:

   - ``advice``: the question asks for suggestions, tips or an opinion (and
     not for what was said before), so it is read again over the same memory,
     told never to decline and to build on what the user owns, did, plans and
     dislikes;
   - ``decline-1``, ``decline-2``: the answer says the memory lacks the
     information, so it is read against whole sessions
     (:func:`memstore.memory.build_sessions_view`), told to check the
     question's premise; the second check runs only if the answer still
     declines;
   - ``recall``: the question asks what the assistant said, suggested or
     created, so it is read against whole sessions, told to reproduce the
     assistant's own content.

Two backends speak one small protocol (:class:`Backend`): any
OpenAI-compatible chat-completions endpoint (:class:`OpenAIBackend`), and a
GGUF chat model run locally through llama-cpp-python (:class:`LocalBackend`).

The API key is read from the environment (or given by a library caller) and
handed to the HTTP client only: it is never part of a message, a trace, a
``repr`` or anything written to the store.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from . import instructions
from .dates import labelled_time
from .errors import AnswerError, ModelError, UsageError
from .memory import DEFAULT_BUDGET, DEFAULT_REPLY_BUDGET, SESSION_VIEW_BUDGET, build_memory, build_sessions_view
from .rules import asks_for_advice, asks_for_recall, declines

if TYPE_CHECKING:
    from .store import Store

Message = dict[str, str]

#: Room for the answer.  Generous because reasoning models spend part of it
#: thinking before they write; a plain model stops long before.
DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 300.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.5
MAX_BACKOFF = 8.0
#: The longest server-requested wait (Retry-After) we honour before retrying.
MAX_RETRY_AFTER = 60.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"

ENV_BASE_URL = "MEMSTORE_ANSWER_BASE_URL"
ENV_API_KEY = "MEMSTORE_ANSWER_API_KEY"
ENV_MODEL = "MEMSTORE_ANSWER_MODEL"
ENV_TIMEOUT = "MEMSTORE_ANSWER_TIMEOUT"

INSTALL_HINT = "pip install 'memstore[answer]'"


# -- the backend protocol ---------------------------------------------------------


@dataclass(frozen=True)
class ChatReply:
    """One chat completion: its text and the token counts the model reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str


class Backend(Protocol):
    """A chat model.  ``context_tokens`` is None when the context is not known (or large)."""

    model: str
    context_tokens: int | None

    def chat(self, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = DEFAULT_MAX_TOKENS) -> ChatReply:
        """Send ``messages``; return the reply or raise :class:`AnswerError`."""
        ...

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` takes (an estimate where the tokenizer is not at hand)."""
        ...

    def close(self) -> None:
        """Release the client or the loaded model."""
        ...


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment: what may appear in a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# -- OpenAI-compatible endpoints --------------------------------------------------


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions endpoint, through the ``openai`` SDK.

    Arguments left as None come from ``MEMSTORE_ANSWER_BASE_URL``,
    ``MEMSTORE_ANSWER_API_KEY``, ``MEMSTORE_ANSWER_MODEL`` and
    ``MEMSTORE_ANSWER_TIMEOUT``.  Retries 408, 409, 429, 5xx, timeouts and
    refused connections ``max_retries`` times with exponential backoff starting
    at ``backoff`` seconds (or the server's Retry-After, up to a minute).
    """

    context_tokens: int | None = None

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise ModelError(f"answering with an API needs the openai package: {INSTALL_HINT}") from None
        self._openai = openai
        model = model or os.environ.get(ENV_MODEL)
        if not model:
            raise UsageError(f"name the answering model: --model-name NAME or {ENV_MODEL}")
        self.model = model
        self.base_url = (base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout if timeout is not None else _env_float(ENV_TIMEOUT, DEFAULT_TIMEOUT)
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        key = api_key or os.environ.get(ENV_API_KEY)
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise UsageError(f"set {ENV_API_KEY} to call {self.base_url} (or point --base-url at a local server)")
        # Local servers (llama.cpp, Ollama, vLLM) take any key; the SDK insists on one.
        self._secret = key or "not-needed"
        self._client = openai.OpenAI(api_key=self._secret, base_url=self.base_url, timeout=self.timeout,
                                     max_retries=0)
        # Parameters some models refuse; learnt from their 400 replies.
        self._tokens_param = "max_tokens"
        self._send_temperature = True

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={safe_url(self.base_url)!r}, timeout={self.timeout:g})"

    def close(self) -> None:
        self._client.close()

    def count_tokens(self, text: str) -> int:
        return len(text.encode("utf-8")) // 4 + 1

    def chat(self, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = DEFAULT_MAX_TOKENS) -> ChatReply:
        attempt = 0
        adapted = 0
        while True:
            params: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                      self._tokens_param: max_tokens}
            if self._send_temperature:
                params["temperature"] = temperature
            try:
                raw = self._client.chat.completions.with_raw_response.create(**params)
                return self._parse(raw.http_response.text)
            except self._openai.BadRequestError as exc:
                if adapted < 2 and self._adapt(exc):
                    adapted += 1
                    continue
                raise self._error(exc, attempt + 1) from None
            except self._openai.APIError as exc:
                if attempt >= self.max_retries or not self._retryable(exc):
                    raise self._error(exc, attempt + 1) from None
                time.sleep(self._delay(attempt, exc))
                attempt += 1

    # -- reply parsing and errors ------------------------------------------------

    def _parse(self, body: str) -> ChatReply:
        where = safe_url(self.base_url)
        try:
            data = json.loads(body)
            choice = data["choices"][0]
            text = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise AnswerError(f"malformed reply from {where}: not a chat completion "
                              f"({_one_line(self._redact(body), 80)!r})") from None
        if not isinstance(text, str) or not text.strip():
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            hint = "; it ran out of tokens before writing (a reasoning model may need a larger --max-tokens)" \
                if reason == "length" else ""
            raise AnswerError(f"the model at {where} returned an empty answer (finish reason: {reason}){hint}")
        usage = data.get("usage") or {}
        return ChatReply(text=text.strip(), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                         completion_tokens=int(usage.get("completion_tokens") or 0),
                         model=str(data.get("model") or self.model))

    def _retryable(self, exc: Exception) -> bool:
        if isinstance(exc, self._openai.APIConnectionError):  # timeouts included
            return True
        status = getattr(exc, "status_code", None)
        return status in (408, 409, 429) or (isinstance(status, int) and status >= 500)

    def _delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                wait = float(headers.get(name)) * scale
            except (TypeError, ValueError):
                continue
            if 0 <= wait <= MAX_RETRY_AFTER:
                return wait
        # Exponential backoff with jitter, so parallel clients spread out.
        return min(self.backoff * 2 ** attempt, MAX_BACKOFF) * (1 - 0.25 * random.random())

    def _adapt(self, exc: Exception) -> bool:
        """Switch a parameter the model refused (newer OpenAI models reject max_tokens and temperature 0)."""
        text = str(exc).lower()
        if self._tokens_param == "max_tokens" and "max_tokens" in text and "max_completion_tokens" in text:
            self._tokens_param = "max_completion_tokens"
            return True
        if self._send_temperature and "temperature" in text and ("unsupported" in text or "not support" in text
                                                                  or "only the default" in text):
            self._send_temperature = False
            return True
        return False

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "[key]") if self._secret else text

    def _error(self, exc: Exception, attempts: int) -> AnswerError:
        """One line naming what went wrong; the server's own words only where they cannot hold the key."""
        oa = self._openai
        where = safe_url(self.base_url)
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if isinstance(exc, oa.APITimeoutError):
            return AnswerError(f"no reply from {where} within {self.timeout:g} s ({tries}); "
                               f"set {ENV_TIMEOUT} to wait longer")
        if isinstance(exc, oa.APIConnectionError):
            return AnswerError(f"cannot reach {where} ({tries}); check {ENV_BASE_URL} and that the server is running")
        if isinstance(exc, (oa.AuthenticationError, oa.PermissionDeniedError)):
            # The server's message may quote part of the key, so it is not repeated.
            return AnswerError(f"{where} refused the API key (HTTP {exc.status_code}); check {ENV_API_KEY}")
        status = getattr(exc, "status_code", None)
        detail = _one_line(self._redact(_server_message(exc)))
        if isinstance(exc, oa.NotFoundError):
            return AnswerError(f"{where} has no model {self.model!r} or no chat-completions route "
                               f"(HTTP 404): {detail}")
        if isinstance(exc, oa.RateLimitError):
            return AnswerError(f"{where} is rate-limiting requests (HTTP 429 after {tries}): {detail}")
        if isinstance(status, int) and status >= 500:
            return AnswerError(f"{where} failed with HTTP {status} after {tries}: {detail}")
        if isinstance(exc, oa.APIResponseValidationError):
            return AnswerError(f"malformed reply from {where}: {detail}")
        if status is not None:
            return AnswerError(f"{where} rejected the request (HTTP {status}): {detail}")
        return AnswerError(f"calling {where} failed: {detail}")


def _server_message(exc: Exception) -> str:
    """The error message in a server's JSON body, or the start of the body."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if msg:
            return str(msg)
    response = getattr(exc, "response", None)
    try:
        text = response.text if response is not None else ""
    except Exception:  # noqa: BLE001 - a body that cannot be read says nothing more
        text = ""
    return text or type(exc).__name__


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"{name} must be a number of seconds, not {value!r}") from None


# -- a local GGUF chat model ------------------------------------------------------


class LocalBackend:
    """A GGUF chat model through llama-cpp-python, fully offline, with the file's chat template.

    The context is the model's trained length unless ``n_ctx`` says otherwise;
    :func:`answer` cuts the memory text to fit it.
    """

    def __init__(self, path: str | Path, *, n_ctx: int | None = None, n_threads: int | None = None,
                 seed: int = 0) -> None:
        from .embed import available_cores, read_model_info

        info = read_model_info(path)  # ModelError when missing or not a GGUF file
        if info.is_embedding_model:
            raise ModelError(f"{info.path} is an embedding model, not a chat model")
        self.path = info.path
        self.model = info.name
        self.context_tokens: int | None = int(n_ctx or info.context_length or 4096)
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelError("answering with a local model needs llama-cpp-python: pip install memstore") from None
        threads = n_threads or available_cores()
        try:
            self._llm = Llama(str(self.path), n_ctx=self.context_tokens, n_batch=min(512, self.context_tokens),
                              n_threads=threads, n_threads_batch=threads, seed=seed, verbose=False)
        except (ValueError, RuntimeError, OSError):
            raise ModelError(f"llama.cpp could not load {self.path} as a chat model") from None
        if not self._llm.metadata.get("tokenizer.chat_template"):
            raise ModelError(f"{self.path} has no chat template; use a chat (instruct) model")

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, path={str(self.path)!r}, n_ctx={self.context_tokens})"

    def close(self) -> None:
        self._llm.close()

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def chat(self, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = DEFAULT_MAX_TOKENS) -> ChatReply:
        msgs = list(messages)
        try:
            out = self._complete(msgs, temperature, max_tokens)
        except _NoSystemRole:
            out = self._complete(_merge_system(msgs), temperature, max_tokens)
        text = (out["choices"][0]["message"].get("content") or "").strip()
        if not text:
            raise AnswerError(f"the local model {self.model} returned an empty answer")
        usage = out.get("usage") or {}
        return ChatReply(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                         self.model)

    def _complete(self, messages: list[Message], temperature: float, max_tokens: int) -> dict[str, Any]:
        try:
            out = self._llm.create_chat_completion(messages=messages, temperature=temperature,
                                                   max_tokens=max_tokens, seed=0)
            return out  # type: ignore[return-value]
        except Exception as exc:  # noqa: BLE001 - llama.cpp and jinja raise assorted types
            msg = str(exc)
            if "context window" in msg:
                raise AnswerError(f"the prompt does not fit {self.model}'s context of {self.context_tokens:,} "
                                  "tokens; pass a smaller --budget") from None
            # Some templates (Gemma's) refuse a system role; the caller folds it into the user message.
            if "system" in msg.lower() and any(m["role"] == "system" for m in messages):
                raise _NoSystemRole from None
            raise AnswerError(f"the local model {self.model} failed: {_one_line(msg)}") from None


class _NoSystemRole(Exception):
    pass


def _merge_system(messages: list[Message]) -> list[Message]:
    """Fold the system message into the first user message, for templates without a system role."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if rest and rest[0]["role"] == "user":
        rest[0]["content"] = system + "\n\n" + rest[0]["content"]
    else:
        rest.insert(0, {"role": "user", "content": system})
    return rest


def make_backend(*, base_url: str | None = None, model: str | None = None,
                 local_model: str | Path | None = None, n_ctx: int | None = None) -> Backend:
    """The backend the CLI options name: a local GGUF file, or an endpoint (flags, then env)."""
    if local_model is not None:
        if base_url or model:
            raise UsageError("--local-model runs a GGUF file; it does not take --base-url or --model-name")
        return LocalBackend(local_model, n_ctx=n_ctx)
    return OpenAIBackend(model, base_url=base_url)


# -- answering ------------------------------------------------------------------------


@dataclass(frozen=True)
class CallTrace:
    """One model call: why it was made, what it cost, how long it took."""

    purpose: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    seconds: float
    #: What the call read: "memory" or "sessions", and its size in bytes.
    view: str = "memory"
    view_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "model": self.model, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 3),
                "view": self.view, "view_bytes": self.view_bytes}


@dataclass
class Answer:
    """The final answer and how it was reached."""

    text: str
    rules_fired: list[str]
    calls: list[CallTrace]
    memory_bytes: int
    #: What the reader changed to make things fit (e.g. a memory cut to a small context).
    notes: list[str] = field(default_factory=list)
    question: str = ""
    scope: str = ""
    date: str = ""

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "scope": self.scope,
            "date": self.date,
            "answer": self.text,
            "rules_fired": list(self.rules_fired),
            "memory_bytes": self.memory_bytes,
            "calls": [c.to_json() for c in self.calls],
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "notes": list(self.notes),
        }


def answer(
    store: Store,
    question: str,
    *,
    scope: str,
    date: str,
    backend: Backend,
    budget: int = DEFAULT_BUDGET,
    rules: bool = True,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    mode: str = "fused",
) -> Answer:
    """Answer ``question``, asked on ``date``, from scope ``scope``'s memory.

    ``budget`` caps the memory text in bytes (and the whole-session view of a
    second read).  With ``rules`` false only the first call is made.
    """
    reader = _Reader(store, question, scope, date, backend, budget, max_tokens, mode)
    memory = reader.memory()
    text = reader.ask("first", memory, None)
    fired: list[str] = []
    if rules:
        if asks_for_advice(question):
            fired.append("advice")
            text = reader.ask("advice", memory, instructions.ADVICE)
        for n in (1, 2):
            if not declines(text):
                break
            fired.append(f"decline-{n}")
            text = reader.ask(f"decline-{n}", reader.sessions(), instructions.DECLINE_CHECK)
        if asks_for_recall(question):
            fired.append("recall")
            text = reader.ask("recall", reader.sessions(), instructions.RECALL)
    return Answer(text=text, rules_fired=fired, calls=reader.calls, memory_bytes=_utf8(memory.text),
                  notes=reader.notes, question=question, scope=scope, date=date)


@dataclass(frozen=True)
class _View:
    name: str
    text: str


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


class _Reader:
    """Builds the views once, fits them to the model's context, and makes the calls."""

    def __init__(self, store: Store, question: str, scope: str, date: str, backend: Backend, budget: int,
                 max_tokens: int, mode: str) -> None:
        if budget <= 0:
            raise UsageError("--budget must be positive")
        if max_tokens <= 0:
            raise UsageError("--max-tokens must be positive")
        self.store, self.question, self.scope, self.date = store, question, scope, date
        self.backend, self.budget, self.mode = backend, budget, mode
        self.calls: list[CallTrace] = []
        self.notes: list[str] = []
        ctx = backend.context_tokens
        # A small context cannot give most of itself to the answer.
        self.max_tokens = max_tokens if ctx is None else min(max_tokens, max(16, ctx // 4))
        self.question_text = instructions.QUESTION.format(date=labelled_time(date)[1], question=question)
        self._memory: _View | None = None
        self._sessions: _View | None = None

    def memory(self) -> _View:
        if self._memory is None:
            def build(budget: int) -> str:
                return build_memory(self.store, self.question, scope=self.scope, date=self.date, budget=budget,
                                    reply_budget=min(DEFAULT_REPLY_BUDGET, budget), mode=self.mode).text

            self._memory = _View("memory", self._fit("the memory text", build, self.budget))
        return self._memory

    def sessions(self) -> _View:
        if self._sessions is None:
            def build(budget: int) -> str:
                return build_sessions_view(self.store, self.question, scope=self.scope, date=self.date,
                                           budget=budget, mode=self.mode).text

            self._sessions = _View("sessions", self._fit("the sessions view", build,
                                                         min(SESSION_VIEW_BUDGET, self.budget)))
        return self._sessions

    def messages(self, view: _View, extra: str | None) -> list[Message]:
        system = instructions.BASE if extra is None else instructions.BASE + "\n\n" + extra
        return [{"role": "system", "content": system},
                {"role": "user", "content": view.text.rstrip("\n") + "\n\n" + self.question_text}]

    def ask(self, purpose: str, view: _View, extra: str | None) -> str:
        t0 = time.perf_counter()
        reply = self.backend.chat(self.messages(view, extra), temperature=0.0, max_tokens=self.max_tokens)
        self.calls.append(CallTrace(purpose, reply.prompt_tokens, reply.completion_tokens, reply.model,
                                    time.perf_counter() - t0, view.name, _utf8(view.text)))
        return reply.text

    # -- fitting a view to a small context ----------------------------------------

    def _room(self) -> int | None:
        """Tokens left for a view once instructions, question and answer are counted."""
        ctx = self.backend.context_tokens
        if ctx is None:
            return None
        longest = max((instructions.ADVICE, instructions.DECLINE_CHECK, instructions.RECALL), key=len)
        fixed = self.backend.count_tokens(instructions.BASE + "\n\n" + longest + "\n\n" + self.question_text)
        room = ctx - self.max_tokens - fixed - 64  # 64: the chat template's own tokens
        if room < 64:
            raise AnswerError(f"{self.backend.model}'s context of {ctx:,} tokens cannot hold the instructions, "
                              f"the question and an answer ({fixed + self.max_tokens:,} tokens); "
                              "use a model with a longer context")
        return room

    def _fit(self, label: str, build: Callable[[int], str], budget: int) -> str:
        """Build a view within ``budget`` bytes, rebuilt smaller (then cut) until it fits the context."""
        text = build(budget)
        room = self._room()
        if room is None:
            return text
        original = _utf8(text)
        tokens = self.backend.count_tokens(text)
        for _ in range(4):
            if tokens <= room:
                break
            # Rebuilding, not cutting, keeps the builder's choice of what matters most.
            smaller = int(_utf8(text) * room / tokens * 0.9)
            try:
                text = build(smaller)
            except UsageError:  # smaller than the view's header
                break
            tokens = self.backend.count_tokens(text)
        while tokens > room and text:
            text = text[: int(len(text) * room / tokens * 0.9)] + "\n[… cut to fit the model's context]\n"
            tokens = self.backend.count_tokens(text)
        if _utf8(text) < original:
            self.notes.append(f"{label} was cut from {original:,} to {_utf8(text):,} bytes to fit "
                              f"{self.backend.model}'s context of {self.backend.context_tokens:,} tokens")
        return text

