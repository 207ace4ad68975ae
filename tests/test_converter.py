"""The MiniLM GGUF converter against a numpy BERT forward pass of the same weights."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

SENTENCES = (
    "My kitten is called Pixel and she sleeps on the keyboard.",
    "The meeting about the Q3 budget was moved to Thursday afternoon.",
    "Café owners in Zürich don't open before 8 o'clock!",
)

_erf = np.frompyfunc(math.erf, 1, 1)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def bert_mean_pooled(t: dict[str, np.ndarray], config: dict[str, Any], ids: list[int]) -> np.ndarray:
    """sentence-transformers' output: BERT, mean over tokens, L2-normalised."""
    W = {k: v.astype(np.float64) for k, v in t.items() if not k.endswith("position_ids")}
    eps, n_heads = float(config["layer_norm_eps"]), int(config["num_attention_heads"])
    n = len(ids)
    x = (W["embeddings.word_embeddings.weight"][ids]
         + W["embeddings.position_embeddings.weight"][:n]
         + W["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    head = x.shape[1] // n_heads
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."

        def lin(h: np.ndarray, name: str) -> np.ndarray:
            return h @ W[p + name + ".weight"].T + W[p + name + ".bias"]

        q, k, v = (lin(x, f"attention.self.{m}").reshape(n, n_heads, head).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        ctx = (scores / scores.sum(-1, keepdims=True)) @ v
        attn = lin(ctx.transpose(1, 0, 2).reshape(n, -1), "attention.output.dense")
        x = _layer_norm(x + attn, W[p + "attention.output.LayerNorm.weight"],
                        W[p + "attention.output.LayerNorm.bias"], eps)
        ffn = lin(_gelu(lin(x, "intermediate.dense")), "output.dense")
        x = _layer_norm(x + ffn, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


@pytest.fixture(scope="module")
def source_dir(build_script: ModuleType) -> Path:
    return build_script.ensure_source_dir()


def test_gguf_matches_numpy_reference(build_script: ModuleType, source_dir: Path,
                                      minilm_embedder: Any) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(source_dir / "tokenizer.json"))
    tok.no_padding()  # tokenizer.json pads and truncates to 128 tokens
    tok.no_truncation()
    tensors = build_script.read_safetensors(source_dir / "model.safetensors")
    config = json.loads((source_dir / "config.json").read_text())
    llm = minilm_embedder._llm
    vectors, _ = minilm_embedder.embed_inputs(list(SENTENCES))
    for sentence, vec in zip(SENTENCES, vectors):
        ids = tok.encode(sentence).ids
        assert llm.tokenize(sentence.encode(), add_bos=True, special=False) == ids
        assert minilm_embedder.tokens(sentence) == ids
        ref = bert_mean_pooled(tensors, config, ids)
        assert float(ref @ vec) > 0.99


def test_gguf_metadata(minilm_path: Path) -> None:
    from memstore.embed import read_model_info

    info = read_model_info(minilm_path)
    assert (info.architecture, info.name, info.embedding_length, info.context_length) == (
        "bert", "all-MiniLM-L6-v2", 384, 512)
    assert info.pooling_type == 1 and info.causal is False and info.is_embedding_model
    assert info.file_type == "F16" and not info.has_dense
    assert 40e6 < info.size < 50e6


def test_phantom_space_vocab(build_script: ModuleType) -> None:
    assert build_script.phantom_space("hello") == "\u2581hello"
    assert build_script.phantom_space("##ing") == "ing"
    assert build_script.phantom_space("[SEP]") == "[SEP]"


def test_second_build_is_a_cache_hit(build_script: ModuleType, minilm_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError("ensure_test_model ran a subprocess on a cache hit")

    monkeypatch.setattr(build_script.subprocess, "run", no_pip)
    mtime = minilm_path.stat().st_mtime_ns
    start = time.perf_counter()
    again = build_script.ensure_test_model()
    assert time.perf_counter() - start < 0.5
    assert again == minilm_path and again.stat().st_mtime_ns == mtime


def test_cli_prints_the_cached_path(build_script: ModuleType, minilm_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert build_script.main(["--cache-dir", str(minilm_path.parent)]) == 0
    assert capsys.readouterr().out.strip() == str(minilm_path)
