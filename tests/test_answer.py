"""Answering against real parts: an HTTP server on 127.0.0.1, and a tiny GGUF chat model.

The server (tests/chat_server.py) speaks the OpenAI chat-completions API and
records every request, so the tests check what the model was actually sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore import instructions
from memstore.answer import LocalBackend, OpenAIBackend, answer
from memstore.errors import AnswerError, ModelError, UsageError
from memstore.memory import build_memory
from tests.chat_server import ChatServer, Request
from tests.conftest import DEMO, run_cli

QUESTION_DATE = "2024-05-01"
SESSIONS_HEADER = "# Whole sessions for a second read"
MEMORY_HEADER = "# Memory for a question asked on"
KEY = "sk-test-DO-NOT-LEAK-7f3a9c1e5b"
DECLINE = "I don't have information about that in our conversations."


@pytest.fixture
def chat_server() -> Iterator[Callable[..., ChatServer]]:
    """Start loopback chat servers; all are stopped after the test."""
    started: list[ChatServer] = []

    def start(policy: Callable[[dict[str, Any]], str] | None = None, **kwargs: Any) -> ChatServer:
        srv = ChatServer(**({"policy": policy} if policy else {}), **kwargs).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def backend(srv: ChatServer, **kwargs: Any) -> OpenAIBackend:
    opts: dict[str, Any] = {"base_url": srv.url, "api_key": KEY, "timeout": 5.0, "backoff": 0.01}
    opts.update(kwargs)
    return OpenAIBackend("test-model", **opts)


def ask(store: Any, srv: ChatServer, question: str, **kwargs: Any) -> Any:
    return answer(store, question, scope="demo", date=QUESTION_DATE, backend=backend(srv), **kwargs)


def reads_sessions(r: Request) -> bool:
    return SESSIONS_HEADER in r.user


# -- what the model is sent ---------------------------------------------------------


def test_first_call_carries_instructions_memory_and_question(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "You named her Pixel.")
    q = "What did I name my kitten?"
    result = ask(demo_store, srv, q)
    assert result.text == "You named her Pixel."
    assert result.rules_fired == []
    assert srv.calls == 1
    req = srv.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.body["model"] == "test-model"
    assert req.body["temperature"] == 0
    assert req.headers["authorization"] == f"Bearer {KEY}"
    memory = build_memory(demo_store, q, scope="demo", date=QUESTION_DATE).text
    assert req.system == instructions.BASE
    assert memory.rstrip("\n") in req.user
    assert req.user.rstrip().endswith(f"Question date: 2024-05-01 (Wed)\nQuestion: {q}")
    assert result.memory_bytes == len(memory.encode())


def test_instructions_hold_no_example_value() -> None:
    """No digit and no capitalised name beyond sentence starts: nothing a benchmark answer could be."""
    for text in (instructions.BASE, instructions.ADVICE, instructions.DECLINE_CHECK, instructions.RECALL):
        assert not any(ch.isdigit() for ch in text)
        assert "$" not in text


def test_trace_lists_tokens_from_usage(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "Pixel.", completion_tokens=11)
    result = ask(demo_store, srv, "What did I name my kitten?")
    (call,) = result.calls
    sent = sum(len(m["content"].encode()) for m in srv.requests[0].messages) // 4
    assert (call.purpose, call.prompt_tokens, call.completion_tokens, call.model) == (
        "first", sent, 11, "loopback-model")
    j = result.to_json()
    assert j["tokens"] == {"prompt": sent, "completion": 11}
    assert j["calls"][0]["view"] == "memory" and j["rules_fired"] == []
    json.dumps(j)


# -- the rules ---------------------------------------------------------------------------


def test_advice_rereads_the_same_memory(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "Try a wand toy, since Pixel is playful.")
    result = ask(demo_store, srv, "Can you recommend some toys for my kitten?")
    assert result.rules_fired == ["advice"]
    assert [c.purpose for c in result.calls] == ["first", "advice"]
    first, second = srv.requests
    assert first.user == second.user  # the same memory and question
    assert MEMORY_HEADER in second.user
    assert instructions.ADVICE not in first.system
    assert instructions.ADVICE in second.system and instructions.BASE in second.system


def test_recall_of_advice_is_not_advice(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "Chorlton, Didsbury and Ancoats.")
    result = ask(demo_store, srv, "Which neighbourhoods did you recommend for cycling?")
    assert result.rules_fired == ["recall"]


def test_recall_rereads_whole_sessions(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "High-quality kitten food, three to four times a day.")
    result = ask(demo_store, srv, "What did you suggest I feed my kitten?")
    assert result.rules_fired == ["recall"]
    first, second = srv.requests
    assert not reads_sessions(first)
    assert reads_sessions(second) and MEMORY_HEADER not in second.user
    assert "assistant: At 10 weeks, feed a high-quality kitten food" in second.user
    assert instructions.RECALL in second.system
    assert result.calls[1].view == "sessions"


def test_decline_check_runs_twice_when_the_answer_still_declines(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: DECLINE)
    result = ask(demo_store, srv, "What is my sister's name?")
    assert result.rules_fired == ["decline-1", "decline-2"]
    assert srv.calls == 3
    assert [reads_sessions(r) for r in srv.requests] == [False, True, True]
    assert all(instructions.DECLINE_CHECK in r.system for r in srv.requests[1:])
    assert result.text == DECLINE


def test_decline_check_runs_once_when_the_reread_answers(demo_store: Any, chat_server: Any) -> None:
    # Declines over the memory, answers over whole sessions.
    srv = chat_server(lambda body: "Lisbon." if SESSIONS_HEADER in body["messages"][-1]["content"] else DECLINE)
    result = ask(demo_store, srv, "Where is my trip with my sister?")
    assert result.rules_fired == ["decline-1"]
    assert srv.calls == 2
    assert result.text == "Lisbon."


def test_no_rule_for_a_plain_question_and_answer(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: "I don't know if you'd like it, but you live in Manchester now.")
    result = ask(demo_store, srv, "Where do I live now?")
    assert result.rules_fired == [] and srv.calls == 1


@pytest.mark.parametrize(("question", "replies", "fired"), [
    ("Any tips for my kitten's first vet visit?", ["first", DECLINE, "checked"], ["advice", "decline-1"]),
    ("What did you tell me about kitten food?", [DECLINE, "checked", "recalled"], ["decline-1", "recall"]),
])
def test_rules_run_in_order_and_each_answer_replaces_the_last(
        demo_store: Any, chat_server: Any, question: str, replies: list[str], fired: list[str]) -> None:
    it = iter(replies)
    srv = chat_server(lambda body: next(it))
    result = ask(demo_store, srv, question)
    assert result.rules_fired == fired
    assert [c.purpose for c in result.calls] == ["first", *fired]
    assert result.text == replies[-1]


def test_rules_off_makes_one_call(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(lambda body: DECLINE)
    result = ask(demo_store, srv, "Can you recommend a hotel?", rules=False)
    assert result.rules_fired == [] and srv.calls == 1


# -- errors --------------------------------------------------------------------------------


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and KEY not in msg
    return msg


def test_timeout_is_one_clear_line(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(mode="slow", delay=5)
    with pytest.raises(AnswerError) as exc:
        answer(demo_store, "Where do I live?", scope="demo", date=QUESTION_DATE,
               backend=backend(srv, timeout=0.3, max_retries=1))
    msg = one_line(exc)
    assert "no reply from http://127.0.0.1:" in msg and "within 0.3 s (2 attempts)" in msg
    assert "MEMSTORE_ANSWER_TIMEOUT" in msg


@pytest.mark.parametrize("retry_after_ms", [20, None])
def test_429_then_success(demo_store: Any, chat_server: Any, retry_after_ms: int | None) -> None:
    """With the server's Retry-After, and with the client's own exponential backoff."""
    srv = chat_server(lambda body: "Manchester.", mode="429-then-ok", fail_times=2, retry_after_ms=retry_after_ms)
    result = ask(demo_store, srv, "Where do I live?")
    assert result.text == "Manchester." and srv.calls == 3


def test_500_after_retries(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(mode="500")
    with pytest.raises(AnswerError) as exc:
        ask(demo_store, srv, "Where do I live?")
    assert "failed with HTTP 500 after 4 attempts: The server had an error" in one_line(exc)
    assert srv.calls == 4


def test_malformed_body(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(mode="malformed")
    with pytest.raises(AnswerError) as exc:
        ask(demo_store, srv, "Where do I live?")
    assert "malformed reply from http://127.0.0.1:" in one_line(exc)
    assert srv.calls == 1  # a bad body is not retried


def test_wrong_key_never_echoes_the_key(demo_store: Any, chat_server: Any) -> None:
    srv = chat_server(mode="auth", key="sk-the-right-one")
    b = backend(srv)
    with pytest.raises(AnswerError) as exc:
        answer(demo_store, "Where do I live?", scope="demo", date=QUESTION_DATE, backend=b)
    assert "refused the API key (HTTP 401); check MEMSTORE_ANSWER_API_KEY" in one_line(exc)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__  # no chained server message
    assert KEY not in repr(b) and KEY not in str(b)
    assert srv.calls == 1  # a refused key is not retried


def test_new_openai_parameters_are_learnt(demo_store: Any, chat_server: Any) -> None:
    """Models that refuse max_tokens and temperature 0 still answer."""
    srv = chat_server(lambda body: "Manchester.", mode="new-params")
    result = ask(demo_store, srv, "Where do I live?")
    assert result.text == "Manchester."
    last = srv.requests[-1].body
    assert "max_completion_tokens" in last and "max_tokens" not in last and "temperature" not in last


def test_missing_openai_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ModelError, match=r"pip install 'memstore\[answer\]'"):
        OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")


def test_safe_url_drops_credentials_and_query() -> None:
    from memstore.answer import safe_url

    assert safe_url("https://me:secret@gw.example:8443/v1?key=abc#x") == "https://gw.example:8443/v1"


def test_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMSTORE_ANSWER_MODEL", "MEMSTORE_ANSWER_API_KEY", "MEMSTORE_ANSWER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UsageError, match="MEMSTORE_ANSWER_MODEL"):
        OpenAIBackend(base_url="http://127.0.0.1:9/v1")
    with pytest.raises(UsageError, match="MEMSTORE_ANSWER_API_KEY"):
        OpenAIBackend("gpt-x")  # the hosted default needs a key
    monkeypatch.setenv("MEMSTORE_ANSWER_MODEL", "from-env")
    monkeypatch.setenv("MEMSTORE_ANSWER_BASE_URL", "http://user:pw@127.0.0.1:9/v1?x=1")
    b = OpenAIBackend()
    assert b.model == "from-env" and repr(b) == (
        "OpenAIBackend(model='from-env', base_url='http://127.0.0.1:9/v1', timeout=300)")


# -- the CLI ---------------------------------------------------------------------------


def cli_env(srv: ChatServer, key: str = KEY) -> dict[str, str]:
    return {"MEMSTORE_ANSWER_BASE_URL": srv.url, "MEMSTORE_ANSWER_MODEL": "test-model",
            "MEMSTORE_ANSWER_API_KEY": key}


def imported_db(tmp_path: Path) -> Path:
    db = tmp_path / "cli.db"
    assert run_cli("--db", str(db), "import", str(DEMO), "-q").code == 0
    return db


def db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def test_cli_ask_end_to_end(tmp_path: Path, chat_server: Any) -> None:
    srv = chat_server(lambda body: "Try a wand toy.", mode="auth", key=KEY)
    db = imported_db(tmp_path)
    r = run_cli("--db", str(db), "ask", "Can you recommend a toy for my kitten?", "--scope", "demo",
                "--date", QUESTION_DATE, "--trace", env=cli_env(srv))
    assert r.code == 0, r.err
    assert r.out == "Try a wand toy.\n"
    assert "rules fired: advice" in r.err
    assert "first" in r.err and "advice" in r.err and " out" in r.err
    assert srv.calls == 2

    r = run_cli("--db", str(db), "ask", "Where do I live?", "--scope", "demo", "--date", QUESTION_DATE,
                "--json", env=cli_env(srv))
    assert r.code == 0, r.err
    data = r.json()
    assert data["answer"] == "Try a wand toy." and data["calls"][0]["model"] == "loopback-model"
    assert KEY not in r.out + r.err
    assert KEY.encode() not in db_bytes(db)


def test_cli_ask_flags_and_errors(tmp_path: Path, chat_server: Any) -> None:
    srv = chat_server(lambda body: "Manchester.", mode="auth", key="sk-the-right-one")
    db = imported_db(tmp_path)
    env = {"MEMSTORE_ANSWER_API_KEY": KEY}
    r = run_cli("--db", str(db), "ask", "Where do I live?", "--scope", "demo", "--date", QUESTION_DATE,
                "--base-url", srv.url, "--model-name", "flag-model", env=env)
    assert r.code == 1
    assert r.err.startswith("memstore: error: http://127.0.0.1:") and r.err.count("\n") == 1
    assert "refused the API key" in r.err and KEY not in r.err
    assert srv.requests[0].body["model"] == "flag-model"
    assert KEY.encode() not in db_bytes(db)

    r = run_cli("--db", str(db), "ask", "Where do I live?", "--scope", "demo", "--date", QUESTION_DATE,
                "--local-model", "x.gguf", "--base-url", srv.url)
    assert r.code == 2 and "--local-model" in r.err
    assert "--api-key" not in run_cli("ask", "--help").out  # the key is never a flag


# -- a local GGUF chat model -------------------------------------------------------------


def test_local_backend_answers(demo_store: Any, tiny_chat_path: Path) -> None:
    """Plumbing only: the tiny model's weights are random, so any text will do."""
    b = LocalBackend(tiny_chat_path, n_ctx=2304, n_threads=1)
    try:
        result = answer(demo_store, "Where do I live now?", scope="demo", date=QUESTION_DATE, backend=b,
                        max_tokens=8)
    finally:
        b.close()
    assert result.text.strip()
    (call,) = result.calls
    assert call.model == "tiny-llama-chat" and call.prompt_tokens > 0 and 0 < call.completion_tokens <= 8
    assert any("cut from" in n and "2,304 tokens" in n for n in result.notes)


def test_local_backend_context_from_the_model(demo_store: Any, tiny_chat_path: Path) -> None:
    b = LocalBackend(tiny_chat_path, n_threads=1)
    try:
        assert b.context_tokens == 512
        with pytest.raises(AnswerError, match="context of 512 tokens cannot hold the instructions"):
            answer(demo_store, "Where do I live now?", scope="demo", date=QUESTION_DATE, backend=b)
    finally:
        b.close()


def test_a_template_without_a_system_role_gets_it_in_the_user_message() -> None:
    from memstore.answer import _merge_system

    merged = _merge_system([{"role": "system", "content": "Rules."}, {"role": "user", "content": "Memory."}])
    assert merged == [{"role": "user", "content": "Rules.\n\nMemory."}]


def test_local_backend_refuses_an_embedding_model(tiny_gemma_path: Path) -> None:
    with pytest.raises(ModelError, match="embedding model, not a chat model"):
        LocalBackend(tiny_gemma_path)


# -- the QA harness -------------------------------------------------------------------------

HARNESS = Path(__file__).resolve().parent.parent / "scripts" / "qa_longmemeval.py"


def lme_question(qid: str, qtype: str, question: str, answer: str, sessions: list[list[dict[str, str]]]) -> dict:
    return {
        "question_id": qid, "question_type": qtype, "question": question, "answer": answer,
        "question_date": "2023/06/10 (Sat) 10:00",
        "haystack_session_ids": [f"{qid}-s{i}" for i in range(len(sessions))],
        "haystack_dates": [f"2023/05/{20 + i:02d} (Sat) 09:00" for i in range(len(sessions))],
        "haystack_sessions": sessions,
        "answer_session_ids": [f"{qid}-s0"],
    }


def tiny_lme(path: Path) -> Path:
    kitten = [[{"role": "user", "content": "I adopted a kitten and named her Pixel.", "has_answer": True},
               {"role": "assistant", "content": "Pixel is a lovely name!"}],
              [{"role": "user", "content": "I bought a scratching post for my cat."},
               {"role": "assistant", "content": "Good idea."}]]
    data = [
        lme_question("q_user", "single-session-user", "What did I name my kitten?", "Pixel", kitten),
        lme_question("q_days", "temporal-reasoning", "How many days ago did I adopt my kitten?", "21 days", kitten),
        lme_question("q_dog_abs", "single-session-user", "What did I name my dog?",
                     "The user never mentioned a dog; only a kitten named Pixel.", kitten),
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def harness_policy() -> Callable[[dict[str, Any]], str]:
    """Answers by question; the judge says yes when the reference is in the response, but the
    temporal answer is judged right only the first time, so it is right in 1 of 3 runs."""
    temporal_judged = []

    def policy(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        if "Answer yes or no only." in text:
            response = text.split("Model response: ", 1)[1]
            if "cannot be answered" in text:
                return "yes" if "don't have" in response else "no"
            if "off-by-one" in text:
                temporal_judged.append(1)
                return "Yes." if len(temporal_judged) == 1 else "No."
            return "yes" if "Pixel" in response else "no"
        if "name my kitten" in text:
            return "Her name is Pixel."
        if "How many days" in text:
            return "21 days."
        return DECLINE

    return policy


def test_qa_harness_end_to_end_and_cached(tmp_path: Path, chat_server: Any) -> None:
    srv = chat_server(harness_policy(), completion_tokens=5)
    data = tiny_lme(tmp_path / "lme_tiny.json")
    out = tmp_path / "report.json"
    cmd = [str(HARNESS), "--data", str(data), "--db", str(tmp_path / "eval" / "lme.db"), "--runs", "3",
           "--base-url", srv.url, "--model-name", "answer-m", "--judge-model", "judge-m",
           "--price", "answer-m=1,2", "--price", "judge-m=3,4", "--cache-dir", str(tmp_path / "qa"),
           "--out", str(out), "--workers", "2"]
    env = {"MEMSTORE_ANSWER_API_KEY": KEY}
    first = run_script(cmd, env)
    assert first.code == 0, first.err
    report = first.out
    assert "# LongMemEval QA: 3 questions × 3 runs" in report
    assert "mean accuracy over 3 runs: **77.78%**" in report
    assert "questions correct in ≥2 of 3 runs: **2 / 3**" in report
    assert "| single-session-user | 2 | 100.00% | 2 |" in report
    assert "| temporal-reasoning | 1 | 33.33% | 0 |" in report
    assert "| abstention (_abs) | 1 | 100.00% | 1 |" in report
    assert "decline-1 3" in report and "decline-2 3" in report
    assert "| answering, per answer | answer-m |" in report and "| judging, total | judge-m |" in report
    calls = srv.calls
    # 9 answers: 6 first reads + 3 × (first + two decline checks) for the abstention question, 9 judgements.
    assert calls == 6 + 9 + 9
    assert f"model calls: {calls} made, 0 from the cache" in report
    judged = [r for r in srv.requests if "Answer yes or no only." in r.user]
    assert {r.body["model"] for r in judged} == {"judge-m"}

    summary = json.loads(out.read_text())["summary"]
    assert summary["correct_in_majority"] == 2 and summary["tokens"]["answer"]["out"] == 5 * 15
    assert summary["tokens"]["per_answer"]["answer_cost"] > 0
    assert KEY not in out.read_text() and KEY not in report

    second = run_script(cmd, env)
    assert second.code == 0, second.err
    assert srv.calls == calls  # everything came from the cache
    assert f"model calls: 0 made, {calls} from the cache" in second.out
    assert "questions correct in ≥2 of 3 runs: **2 / 3**" in second.out


def run_script(cmd: list[str], env: dict[str, str]) -> Any:
    import os
    import subprocess

    from tests.conftest import CliResult

    full = {**os.environ, "MEMSTORE_CACHE_DIR": "/nonexistent-memstore-cache", **env}
    proc = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, env=full, timeout=300)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)
