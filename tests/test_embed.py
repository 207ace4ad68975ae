"""memstore.embed with real GGUF models run by llama-cpp-python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstore.embed import PROFILES, load_embedder, read_model_info
from memstore.errors import ModelError, UsageError

ROOT = Path(__file__).resolve().parent.parent

PARAPHRASES = [
    ("My cat is called Pixel.", "Pixel is the name of my kitten."),
    ("The train to Paris leaves at nine in the morning.",
     "Our Paris train departs at 9 am."),
    ("I moved to a new apartment last week.", "Last week I relocated to a different flat."),
    ("How do I reset my router password?", "What is the way to change the password on my router?"),
    ("She enjoys running marathons on weekends.", "On weekends she likes to run marathons."),
]


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def gemma(tiny_gemma_path: Path) -> Any:
    e = load_embedder(tiny_gemma_path)
    yield e
    e.close()


# -- quality and shape --------------------------------------------------------


def test_paraphrases_score_above_unrelated_pairs(minilm_embedder: Any) -> None:
    left = minilm_embedder.embed_documents([a for a, _ in PARAPHRASES])
    right = minilm_embedder.embed_documents([b for _, b in PARAPHRASES])
    sims = left @ right.T
    matched = np.diag(sims)
    unrelated = sims[~np.eye(len(PARAPHRASES), dtype=bool)]
    assert matched.min() > unrelated.max()


def test_vectors_are_unit_float32_of_model_dim(minilm_embedder: Any) -> None:
    vecs, n_tokens = minilm_embedder.embed_inputs(["one text", "another, longer text here"])
    assert minilm_embedder.dim == 384
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert n_tokens == sum(len(minilm_embedder.tokens(t)) for t in ["one text", "another, longer text here"])


def test_matches_llama_cpp_embed(minilm_embedder: Any) -> None:
    text = "Feeding tokens directly gives the same vector as llama-cpp-python's embed()."
    ref = np.array(minilm_embedder._llm.embed(text, normalize=True))
    assert float(ref @ minilm_embedder.embed_inputs([text])[0][0]) > 0.9999


def test_tokens_equal_llama_tokenizer_with_specials(minilm_embedder: Any, gemma: Any) -> None:
    for e in (minilm_embedder, gemma):
        for text in ("hello world", "  spaced   out ", "Ünïcödé, [SEP] <eos> ✓", "a"):
            assert e.tokens(text) == e._llm.tokenize(text.encode(), add_bos=True, special=False)


def test_empty_and_blank_texts_embed(minilm_embedder: Any, gemma: Any) -> None:
    # Chosen behaviour: embedded as-is, so the model sees only its specials.
    for e in (minilm_embedder, gemma):
        vecs, n = e.embed_inputs(["", "   ", "\n\t"])
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        assert n >= 3 * len(e.tokens(""))
    assert minilm_embedder.tokens("   ") == [101, 102]  # WordPiece drops whitespace
    assert gemma.tokens("") == [2, 1]  # <bos> <eos>


# -- profiles, prompts, dimensions ------------------------------------------------


def test_profile_detection(minilm_embedder: Any, gemma: Any) -> None:
    assert minilm_embedder.profile.name == "generic"
    assert minilm_embedder.profile.max_tokens == 512
    assert minilm_embedder.profile.dims == (384,)
    assert minilm_embedder.model_id == "all-MiniLM-L6-v2"
    assert gemma.profile.name == "embeddinggemma"
    assert gemma.profile.max_tokens == 2048
    assert gemma.profile.dims == (64, 32, 16, 8)  # halvings: 64 is not a 768-family size
    assert PROFILES["embeddinggemma"].dims == (768, 512, 256, 128)


def test_gemma_prompts(gemma: Any) -> None:
    assert gemma.query_input("where is my cat") == "task: search result | query: where is my cat"
    assert gemma.document_input("the cat is home") == "title: none | text: the cat is home"
    assert gemma.document_input("the cat is home", "Cats") == "title: Cats | text: the cat is home"
    text = "the cat is home"
    q, d = gemma.embed_queries([text])[0], gemma.embed_documents([text])[0]
    assert float(q @ d) < 0.9999
    np.testing.assert_allclose(q, gemma.embed_inputs([gemma.query_input(text)])[0][0], atol=1e-6)
    titled = gemma.embed_documents([text, text], titles=["Cats", None])
    np.testing.assert_allclose(titled[1], d, atol=1e-6)
    assert float(titled[0] @ d) < 0.9999


def test_generic_prompts_are_identity(minilm_embedder: Any) -> None:
    assert minilm_embedder.query_input("x {y}") == "x {y}"
    assert minilm_embedder.document_input("x {y}", "title") == "x {y}"


def test_profile_override(tiny_gemma_path: Path) -> None:
    e = load_embedder(tiny_gemma_path, profile="generic")
    assert e.profile.name == "generic" and e.query_input("q") == "q"
    assert e.profile.dims == (64,) and e.profile.max_tokens == 512


def test_matryoshka_truncation_renormalises_prefix(tiny_gemma_path: Path, gemma: Any) -> None:
    texts = ["my kitten is called pixel", "where is the sqlite file"]
    full = gemma.embed_documents(texts)
    for dim in (32, 16):
        small = load_embedder(tiny_gemma_path, dim=dim)
        vecs = small.embed_documents(texts)
        assert small.dim == dim and vecs.shape == (2, dim)
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        for v, f in zip(vecs, full):
            np.testing.assert_allclose(v, _unit(f[:dim]), atol=1e-5)
        small.close()


def test_dense_layers_detected_and_used(tiny_gemma_dense_path: Path, tiny_gemma_path: Path,
                                        gemma: Any) -> None:
    assert read_model_info(tiny_gemma_dense_path).has_dense
    assert not read_model_info(tiny_gemma_path).has_dense
    dense = load_embedder(tiny_gemma_dense_path)
    text = ["the cat is home"]
    v = dense.embed_documents(text)
    assert v.shape == (1, 64)
    assert float(v[0] @ gemma.embed_documents(text)[0]) < 0.9999
    dense.close()


def test_bad_dim_is_a_usage_error(minilm_path: Path, tiny_gemma_path: Path) -> None:
    with pytest.raises(UsageError, match="choose one of 384"):
        load_embedder(minilm_path, dim=128)
    with pytest.raises(UsageError, match="choose one of 64, 32, 16, 8"):
        load_embedder(tiny_gemma_path, dim=768)


def test_bad_options_are_usage_errors(minilm_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown profile"):
        load_embedder(minilm_path, profile="nope")
    with pytest.raises(UsageError, match="long_text"):
        load_embedder(minilm_path, long_text="drop")


def test_titles_must_match_documents(gemma: Any) -> None:
    with pytest.raises(UsageError, match="2 titles for 1 documents"):
        gemma.embed_documents(["a"], titles=["x", "y"])


# -- fingerprint ------------------------------------------------------------------


def test_fingerprint_stable_and_sensitive(minilm_embedder: Any, minilm_path: Path,
                                          tiny_gemma_path: Path, gemma: Any,
                                          tmp_path: Path) -> None:
    again = load_embedder(minilm_path)
    assert again.fingerprint == minilm_embedder.fingerprint
    again.close()
    copy = shutil.copy(tiny_gemma_path, tmp_path / "renamed-copy.gguf")
    e_copy = load_embedder(copy)
    e_dim = load_embedder(tiny_gemma_path, dim=32)
    e_prof = load_embedder(tiny_gemma_path, profile="generic")
    assert e_copy.fingerprint == gemma.fingerprint
    assert len({gemma.fingerprint, e_dim.fingerprint, e_prof.fingerprint,
                minilm_embedder.fingerprint}) == 4
    for e in (e_copy, e_dim, e_prof):
        e.close()


# -- refusing bad models ----------------------------------------------------------


def test_missing_model_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ModelError) as err:
        load_embedder(missing)
    assert str(missing) in str(err.value)
    assert "memstore model pull" in str(err.value) and "--model PATH" in str(err.value)


def test_non_gguf_and_truncated_files(tmp_path: Path, minilm_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a model at all")
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.gguf"
    with open(minilm_path, "rb") as f:
        truncated.write_bytes(f.read(4096))
    for path in (text, empty, truncated, tmp_path):
        with pytest.raises(ModelError, match="is not a GGUF model file"):
            load_embedder(path)


def test_chat_model_is_refused(tiny_chat_path: Path) -> None:
    info = read_model_info(tiny_chat_path)
    assert info.architecture == "llama" and not info.is_embedding_model
    with pytest.raises(ModelError) as err:
        load_embedder(tiny_chat_path)
    assert str(err.value) == (
        f"{tiny_chat_path} is a llama language model, not an embedding model; "
        "use an embedding GGUF such as EmbeddingGemma (memstore model pull)")


def test_tiny_chat_model_generates(tiny_chat_path: Path) -> None:
    from llama_cpp import Llama

    llm = Llama(str(tiny_chat_path), n_ctx=256, verbose=False, seed=1)
    out = llm.create_chat_completion([{"role": "user", "content": "hello"}], max_tokens=4)
    assert out["choices"][0]["message"]["role"] == "assistant"
    assert out["usage"]["completion_tokens"] >= 1
    llm.close()


# -- long and hostile inputs (in a subprocess: an abort must fail, not kill, pytest) -----

RISKY = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from memstore.embed import load_embedder

    out = {}
    for label, path in (("minilm", sys.argv[1]), ("gemma", sys.argv[2])):
        e = load_embedder(path)
        limit = e.profile.max_tokens
        r = out[label] = {"limit": limit}
        # "hello" is one token in both vocabularies: specials + words = limit + 1.
        n_words = limit + 1 - len(e.tokens(""))
        over = " ".join(["hello"] * n_words)
        r["over_tokens_full"] = len(e._llm.tokenize(over.encode(), add_bos=True))
        r["over_tokens_fed"] = len(e.tokens(over))
        r["over_last_is_special"] = e.tokens(over)[-1] == e.tokens("")[-1]
        fitting = " ".join(["hello"] * (n_words - 1))
        a, b = e.embed_inputs([over, fitting])[0]
        r["over_vs_fitting_cos"] = float(a @ b)
        big = ("The quick brown fox jumps over the lazy dog. " * 23000)[:1_000_000]
        t = time.perf_counter()
        v, n = e.embed_inputs([big])
        r["mb_seconds"] = time.perf_counter() - t
        r["mb_tokens"] = n
        r["mb_norm"] = float(np.linalg.norm(v[0]))
        hostile = ["\\ud800 lone surrogate", "nul\\x00byte", "[SEP] [CLS] <eos> <bos>",
                   "\\u200b" * 5000, "🙂" * 3000, " " * 100000 + "tail"]
        v, n = e.embed_inputs(hostile)
        r["hostile_norms"] = np.linalg.norm(v, axis=1).round(4).tolist()
        r["hostile_max_fed"] = max(len(e.tokens(h)) for h in hostile)
        e.close()
        c = load_embedder(path, long_text="chunk")
        k = 1000  # just over one window: the fewest model calls that chunk
        while len(c._tokenize(big[:k])) <= limit:
            k *= 2
        v, n = c.embed_inputs([big[:k]])
        r["chunk_tokens"] = n
        r["chunk_norm"] = float(np.linalg.norm(v[0]))
        c.close()
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def risky_result(minilm_path: Path, tiny_gemma_path: Path) -> dict[str, Any]:
    # One thread unless told otherwise: on a busy shared machine a second
    # llama.cpp thread mostly waits at barriers, doubling this test's time.
    env = {"MEMSTORE_THREADS": "1", **os.environ}
    proc = subprocess.run([sys.executable, "-c", RISKY, str(minilm_path), str(tiny_gemma_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 0, f"subprocess died ({proc.returncode}): {proc.stderr[-2000:]}"
    # verbose=False must keep llama.cpp's C-level logging off the terminal.
    assert proc.stderr == ""
    return json.loads(proc.stdout)


@pytest.mark.parametrize("model", ["minilm", "gemma"])
def test_limit_plus_one_token_text_keeps_final_special(risky_result: dict[str, Any],
                                                       model: str) -> None:
    r = risky_result[model]
    assert r["over_tokens_full"] == r["limit"] + 1
    assert r["over_tokens_fed"] == r["limit"]
    assert r["over_last_is_special"]
    # Truncation drops the last word and keeps [SEP]/<eos>: the same input as
    # the text one word shorter.
    assert r["over_vs_fitting_cos"] > 0.99999


@pytest.mark.parametrize("model", ["minilm", "gemma"])
def test_megabyte_text_is_fast_and_truncated(risky_result: dict[str, Any], model: str) -> None:
    r = risky_result[model]
    assert r["mb_tokens"] == r["limit"]
    assert abs(r["mb_norm"] - 1) < 1e-5
    assert r["mb_seconds"] < 3  # dominated by the model call, not tokenising 1 MB


@pytest.mark.parametrize("model", ["minilm", "gemma"])
def test_hostile_texts_embed(risky_result: dict[str, Any], model: str) -> None:
    r = risky_result[model]
    assert all(abs(n - 1) < 1e-4 for n in r["hostile_norms"])
    assert r["hostile_max_fed"] <= r["limit"]


@pytest.mark.parametrize("model", ["minilm", "gemma"])
def test_chunk_mode_embeds_every_window(risky_result: dict[str, Any], model: str) -> None:
    r = risky_result[model]
    assert r["chunk_tokens"] > r["limit"]
    assert abs(r["chunk_norm"] - 1) < 1e-5


def test_cut_before_tokenising_matches_full_tokenisation(minilm_embedder: Any) -> None:
    # A long run of spaces yields no tokens: the character cut must grow
    # until it has enough tokens, and agree with tokenising everything.
    text = " " * 50_000 + "word " * 2000
    full = minilm_embedder._llm.tokenize(text.encode(), add_bos=False)
    got = minilm_embedder.tokens(text)
    assert got == [101] + full[:510] + [102]


def test_import_is_light() -> None:
    code = ("import sys, memstore.embed, memstore.download; "
            "print(sorted(m for m in ('llama_cpp', 'numpy', 'gguf') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
