"""memstore.download against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import http.server
import os
import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest

from memstore import download
from memstore.download import ModelSource, pull, resolve_model_path
from memstore.errors import ModelError

PAYLOAD = bytes(range(256)) * 4096 + b"tail"  # 1 MiB and a bit: several chunks


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Serve a directory holding model.gguf; yields the base URL."""
    root = tmp_path_factory.mktemp("www")
    (root / "model.gguf").write_bytes(PAYLOAD)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMSTORE_MODEL_URL", raising=False)
    monkeypatch.delenv("MEMSTORE_MODEL", raising=False)
    monkeypatch.setenv("MEMSTORE_CACHE_DIR", str(tmp_path / "cache"))


def source(url: str, sha256: str | None = None) -> ModelSource:
    return ModelSource(url=url, filename="model.gguf", size=len(PAYLOAD),
                       sha256=sha256 or hashlib.sha256(PAYLOAD).hexdigest())


def test_pull_downloads_verifies_and_reports_progress(server: str, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    dest = tmp_path / "models" / "model.gguf"
    got = pull(source(f"{server}/model.gguf"), dest, progress=lambda d, t: calls.append((d, t)))
    assert got == dest
    assert dest.read_bytes() == PAYLOAD
    assert not dest.with_name("model.gguf.part").exists()
    assert calls[-1] == (len(PAYLOAD), len(PAYLOAD))
    assert len(calls) > 2 and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_pull_skips_download_when_file_is_already_right(tmp_path: Path) -> None:
    dest = tmp_path / "model.gguf"
    dest.write_bytes(PAYLOAD)
    mtime = dest.stat().st_mtime_ns
    # The URL is unreachable: a download attempt would raise.
    assert pull(source("http://127.0.0.1:9/model.gguf"), dest) == dest
    assert dest.stat().st_mtime_ns == mtime


def test_pull_default_destination_is_the_cache(server: str, tmp_path: Path) -> None:
    got = pull(source(f"{server}/model.gguf"))
    assert got == tmp_path / "cache" / "models" / "model.gguf"
    assert got.read_bytes() == PAYLOAD


def test_env_url_overrides_source_url(server: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSTORE_MODEL_URL", f"{server}/model.gguf")
    dest = pull(source("http://127.0.0.1:9/unreachable.gguf"), tmp_path / "m.gguf")
    assert dest.read_bytes() == PAYLOAD


def test_wrong_sha_raises_and_leaves_nothing(server: str, tmp_path: Path) -> None:
    dest = tmp_path / "model.gguf"
    with pytest.raises(ModelError) as err:
        pull(source(f"{server}/model.gguf", sha256="0" * 64), dest)
    msg = str(err.value)
    assert "0" * 64 in msg and hashlib.sha256(PAYLOAD).hexdigest() in msg
    assert list(tmp_path.iterdir()) == []


def test_wrong_size_raises_and_leaves_nothing(server: str, tmp_path: Path) -> None:
    bad = ModelSource(url=f"{server}/model.gguf", filename="m", size=len(PAYLOAD) + 1,
                      sha256=hashlib.sha256(PAYLOAD).hexdigest())
    with pytest.raises(ModelError, match=f"expected {len(PAYLOAD) + 1}"):
        pull(bad, tmp_path / "model.gguf")
    assert list(tmp_path.iterdir()) == []


def test_connection_refused_gives_the_offline_hint(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/model.gguf"
    with pytest.raises(ModelError) as err:
        pull(source(url), tmp_path / "model.gguf", timeout=5)
    msg = str(err.value)
    assert msg.startswith(f"could not download {url}: ")
    assert "download the file yourself and pass --model PATH" in msg
    assert list(tmp_path.iterdir()) == []


def test_http_404_is_a_model_error(server: str, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="could not download .*missing.gguf"):
        pull(source(f"{server}/missing.gguf"), tmp_path / "model.gguf")
    assert list(tmp_path.iterdir()) == []


def test_cache_dir_and_default_model_path(tmp_path: Path) -> None:
    assert download.cache_dir() == tmp_path / "cache"
    assert download.default_model_path() == (
        tmp_path / "cache" / "models" / download.DEFAULT_MODEL.filename)


def test_resolve_model_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, stored = (tmp_path / n for n in ("explicit.gguf", "env.gguf", "stored.gguf"))
    default = download.default_model_path()
    for p in (explicit, env, stored, default):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x")
    monkeypatch.setenv("MEMSTORE_MODEL", str(env))
    assert resolve_model_path(str(explicit), str(stored)) == explicit
    assert resolve_model_path(None, str(stored)) == env
    monkeypatch.delenv("MEMSTORE_MODEL")
    assert resolve_model_path(None, str(stored)) == stored
    assert resolve_model_path(None, str(tmp_path / "gone.gguf")) == default
    assert resolve_model_path(None, None) == default
    default.unlink()
    assert resolve_model_path(None, str(tmp_path / "gone.gguf")) is None


def test_resolve_model_path_missing_explicit_or_env_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelError, match="memstore model pull"):
        resolve_model_path(str(tmp_path / "nope.gguf"))
    monkeypatch.setenv("MEMSTORE_MODEL", str(tmp_path / "nope2.gguf"))
    with pytest.raises(ModelError, match="MEMSTORE_MODEL"):
        resolve_model_path(None, None)


# -- the `memstore model` commands, in a real subprocess -------------------------


def test_cli_model_pull_refuses_a_file_with_the_wrong_hash(server: str, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    cache = tmp_path / "cli-cache"
    r = run_cli("model", "pull", "-q", env={"MEMSTORE_MODEL_URL": f"{server}/model.gguf",
                                            "MEMSTORE_CACHE_DIR": str(cache)})
    assert r.code == 1
    assert r.err.startswith("memstore: error: download of ") and f"expected {download.DEFAULT_MODEL.size}" in r.err
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    assert list(cache.rglob("*.gguf*")) == []  # neither the file nor a .part is left


def test_cli_model_pull_offline_says_how_to_fix(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run_cli("model", "pull", "-q", env={"MEMSTORE_MODEL_URL": f"http://127.0.0.1:{port}/m.gguf",
                                            "MEMSTORE_CACHE_DIR": str(tmp_path / "c")})
    assert r.code == 1 and "--model PATH" in r.err and "Traceback" not in r.err


def test_cli_model_path_and_info(minilm_path: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    env = {"MEMSTORE_CACHE_DIR": str(tmp_path / "empty-cache")}
    missing = run_cli("model", "path", "--db", str(tmp_path / "none.db"), env=env)
    assert missing.code == 1 and "memstore model pull" in missing.err
    assert run_cli("model", "path", "--model", str(minilm_path), env=env).out.strip() == str(minilm_path)
    by_env = run_cli("model", "path", env={**env, "MEMSTORE_MODEL": str(minilm_path)})
    assert by_env.out.strip() == str(minilm_path)
    info = run_cli("model", "info", "--model", str(minilm_path), "--json", env=env)
    assert info.code == 0, info.err
    data = info.json()
    assert data["architecture"] == "bert" and data["embedding_length"] == 384
    assert data["is_embedding_model"] is True and data["profile"] == "generic"
    # the model recorded in a store is found after --model and MEMSTORE_MODEL
    db = tmp_path / "m.db"
    from tests.conftest import DEMO

    assert run_cli("import", str(DEMO), "--embed", "--db", str(db), "--model", str(minilm_path), env=env).code == 0
    assert run_cli("model", "path", "--db", str(db), env=env).out.strip() == str(minilm_path)
