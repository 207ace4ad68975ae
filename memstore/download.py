"""Finding and downloading the embedding model (``memstore model pull``).

Only the standard library is used for the download, so pulling the model
needs nothing beyond memstore's own dependencies.  A download is streamed to
``<dest>.part``, checked against a pinned size and SHA-256, and renamed into
place: ``dest`` is never a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from memstore.errors import ModelError

#: Environment variable that overrides a source's URL (used by tests and mirrors).
MODEL_URL_ENV = "MEMSTORE_MODEL_URL"
#: Environment variable naming the model file to use, below ``--model``.
MODEL_ENV = "MEMSTORE_MODEL"
#: Environment variable overriding the cache directory.
CACHE_DIR_ENV = "MEMSTORE_CACHE_DIR"

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelSource:
    """Where to download a model file, and what it must hash to."""

    url: str
    filename: str
    size: int
    sha256: str


DEFAULT_MODEL = ModelSource(
    url="https://huggingface.co/ggml-org/embeddinggemma-300M-GGUF/resolve/"
        "0f741b5a6585bd53aeb15cd1372c56f2a0f65e12/embeddinggemma-300M-Q8_0.gguf",
    filename="embeddinggemma-300M-Q8_0.gguf",
    size=333_590_944,
    sha256="b5ce9d77a3fc4b3b39ccb5643c36777911cc4eb46a66962eadfa3f5f60490d63",
)


def cache_dir() -> Path:
    """memstore's cache directory: ``$MEMSTORE_CACHE_DIR`` or the user cache dir."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("memstore"))


def default_model_path() -> Path:
    """Where ``memstore model pull`` puts the default model."""
    return cache_dir() / "models" / DEFAULT_MODEL.filename


def pull(source: ModelSource = DEFAULT_MODEL, dest: Path | None = None, *,
         progress: Callable[[int, int], None] | None = None, timeout: float = 30) -> Path:
    """Download ``source`` to ``dest`` (default: the cache), verify it, return its path.

    ``progress(done, total)`` is called as bytes arrive.  If ``dest`` already
    holds the right file, nothing is downloaded.  Raises :class:`ModelError`
    when the download fails or the file does not match its size and SHA-256.
    """
    dest = Path(dest) if dest is not None else cache_dir() / "models" / source.filename
    url = os.environ.get(MODEL_URL_ENV) or source.url
    if _matches(dest, source):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        size, digest = _download(url, part, source.size, progress, timeout)
        _check(source, size, digest, url)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


def _download(url: str, part: Path, expected_size: int,
              progress: Callable[[int, int], None] | None, timeout: float) -> tuple[int, str]:
    """Stream ``url`` into ``part``; return (bytes written, sha256 hex)."""
    sha = hashlib.sha256()
    done = 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
            total = int(resp.headers.get("Content-Length") or expected_size)
            if progress:
                progress(0, total)
            while chunk := resp.read(_CHUNK):
                out.write(chunk)
                sha.update(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ModelError(
            f"could not download {url}: {reason}; connect to the internet, "
            "or download the file yourself and pass --model PATH") from exc
    return done, sha.hexdigest()


def _check(source: ModelSource, size: int, digest: str, url: str) -> None:
    if size != source.size:
        raise ModelError(f"download of {url} is {size} bytes, expected {source.size}; "
                         "the file was deleted, run `memstore model pull` again")
    if digest != source.sha256:
        raise ModelError(f"download of {url} has sha256 {digest}, expected {source.sha256}; "
                         "the file was deleted, check the URL or run `memstore model pull` again")


def _matches(path: Path, source: ModelSource) -> bool:
    """True if ``path`` exists with the source's size and SHA-256."""
    try:
        if path.stat().st_size != source.size:
            return False
    except OSError:
        return False
    return _sha256_file(path) == source.sha256


def _sha256_file(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def resolve_model_path(explicit: str | None = None, stored: str | None = None) -> Path | None:
    """Pick the embedding model file to use, or None if there is none.

    Order: ``explicit`` (``--model``), ``$MEMSTORE_MODEL``, ``stored`` (the
    path recorded in the store) if it exists, the pulled default model if it
    exists.  A path given explicitly or by environment must exist.
    """
    for given, origin in ((explicit, "--model"), (os.environ.get(MODEL_ENV), MODEL_ENV)):
        if given:
            path = Path(given).expanduser()
            if not path.is_file():
                raise ModelError(f"model file {path} (from {origin}) does not exist; "
                                 "run `memstore model pull` or pass --model PATH")
            return path
    if stored and Path(stored).expanduser().is_file():
        return Path(stored).expanduser()
    default = default_model_path()
    return default if default.is_file() else None
