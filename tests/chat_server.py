"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

It speaks ``POST /v1/chat/completions`` (and ``/chat/completions``), answers
with a reply policy the test scripts (a function of the request body), and
records every request.  Modes reproduce what real endpoints do when things go
wrong:

- ``normal``: 200 with the policy's text and a ``usage`` block;
- ``429-then-ok``: the first ``fail_times`` requests get 429, then normal;
- ``500``: always 500;
- ``malformed``: 200 whose body is not JSON;
- ``auth``: 401 unless the bearer key is ``key`` (the 401 body quotes the
  key it got, as some servers do, so tests can check it is never repeated);
- ``slow``: sleeps ``delay`` seconds before answering (longer than a client's timeout);
- ``new-params``: 400 for ``max_tokens`` or a ``temperature``, as newer OpenAI
  models answer, so clients must send ``max_completion_tokens`` and no temperature.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Policy = Callable[[dict[str, Any]], str]

ROUTES = ("/v1/chat/completions", "/chat/completions")


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, str]]:
        return self.body.get("messages", [])

    @property
    def text(self) -> str:
        """Every message's content, joined: what the model was shown."""
        return "\n".join(m.get("content", "") for m in self.messages)

    @property
    def system(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m["role"] == "system")

    @property
    def user(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m["role"] == "user")


def echo_policy(body: dict[str, Any]) -> str:
    return "An answer."


@dataclass
class ChatServer:
    """Start with :meth:`start` (or as a context manager); ``url`` is the base URL with ``/v1``."""

    policy: Policy = echo_policy
    mode: str = "normal"
    key: str | None = None
    fail_times: int = 1
    delay: float = 5.0
    model: str = "loopback-model"
    #: Usage reported per call: completion tokens are fixed; prompt tokens count 4 bytes a token.
    completion_tokens: int = 7
    #: Sent as ``retry-after-ms`` with 429 and 500 replies when set.
    retry_after_ms: int | None = None
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                server._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes slow handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    # -- requests --------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        if h.path.split("?")[0] not in ROUTES:
            self._send(h, 404, {"error": {"message": f"no route {h.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(h, 400, {"error": {"message": "request body is not JSON"}})
            return
        with self._lock:
            self.requests.append(Request(h.path, {k.lower(): v for k, v in h.headers.items()}, body))
            n = len(self.requests)
        if self.mode == "auth" and h.headers.get("Authorization") != f"Bearer {self.key}":
            got = (h.headers.get("Authorization") or "").removeprefix("Bearer ")
            self._send(h, 401, {"error": {"message": f"Incorrect API key provided: {got}",
                                          "type": "invalid_request_error", "code": "invalid_api_key"}})
            return
        if self.mode == "429-then-ok" and n <= self.fail_times:
            self._send(h, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                       headers=self._retry_after())
            return
        if self.mode == "500":
            self._send(h, 500, {"error": {"message": "The server had an error", "type": "server_error"}},
                       headers=self._retry_after())
            return
        if self.mode == "new-params" and "max_tokens" in body:
            self._send(h, 400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                          "this model. Use 'max_completion_tokens' instead.", "param": "max_tokens"}})
            return
        if self.mode == "new-params" and "temperature" in body:
            self._send(h, 400, {"error": {"message": "Unsupported value: 'temperature' does not support 0 with this "
                                          "model. Only the default (1) value is supported.", "param": "temperature"}})
            return
        if self.mode == "malformed":
            self._send_raw(h, 200, b"<html>this is not json", "application/json")
            return
        if self.mode == "slow" and self._stop.wait(self.delay):
            return
        text = self.policy(body)
        prompt = sum(len(m.get("content", "").encode()) for m in body.get("messages", [])) // 4
        self._send(h, 200, {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": self.completion_tokens,
                      "total_tokens": prompt + self.completion_tokens},
        })

    def _retry_after(self) -> dict[str, str]:
        return {} if self.retry_after_ms is None else {"retry-after-ms": str(self.retry_after_ms)}

    def _send(self, h: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(h, status, json.dumps(obj).encode(), "application/json", headers)

    def _send_raw(self, h: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str,
                  headers: dict[str, str] | None = None) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            pass
