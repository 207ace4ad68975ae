"""Tiny random-weight GGUF models that the tests write for themselves.

They are deterministic (seeded RNG), about half a megabyte, and written in well
under a second.  Their vectors mean nothing; they exercise llama.cpp code paths
(architecture, tokenizer, pooling, prompts, truncation) without a 300 MB
download.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

# Word pieces of the toy SentencePiece vocabulary.  Every prefix of every
# piece is added too, because llama.cpp's SPM tokenizer only merges into
# pieces that exist in the vocabulary.
_WORDS = (
    "the a an and or of to in on at for with is was are be it i you my me we "
    "cat dog kitten name memory store text query title search result task none "
    "hello world what where when who how chat model assistant user system "
    "sqlite file answer question remember pixel blue green red paris london"
).split()
_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,:;!?'\"-|()"

GEMMA_SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>")
CHATML_SPECIALS = ("<|im_start|>", "<|im_end|>")

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _spm_vocab(specials: tuple[str, ...]) -> tuple[list[str], list[float], list[int]]:
    """Build (tokens, scores, token types) for a toy SentencePiece vocabulary."""
    tokens: list[str] = list(specials)
    types: list[int] = [gguf.TokenType.CONTROL] * len(specials)
    types[specials.index("<unk>")] = gguf.TokenType.UNKNOWN
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    pieces: list[str] = ["\u2581"] + list(_CHARS)
    for word in _WORDS:
        piece = "\u2581" + word
        pieces += [piece[:k] for k in range(2, len(piece) + 1)]
    seen = set(tokens)
    for piece in pieces:
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(gguf.TokenType.NORMAL)
    # Longer pieces score higher, so merges prefer whole words.
    scores = [0.0 if t != gguf.TokenType.NORMAL else float(len(tok)) for tok, t in zip(tokens, types)]
    return tokens, scores, types


def _write_spm_tokenizer(writer: gguf.GGUFWriter, tokens: list[str], scores: list[float],
                         types: list[int], *, bos: int, eos: int, unk: int, pad: int,
                         add_bos: bool, add_eos: bool) -> None:
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(bos)
    writer.add_eos_token_id(eos)
    writer.add_unk_token_id(unk)
    writer.add_pad_token_id(pad)
    writer.add_add_bos_token(add_bos)
    writer.add_add_eos_token(add_eos)


def _finish(writer: gguf.GGUFWriter, path: Path, tmp: Path) -> Path:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(path)
    return path


def _rand(rng: np.random.Generator, *shape: int, std: float = 0.1) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(np.float32)


# ---------------------------------------------------------------------------
# gemma-embedding (EmbeddingGemma's architecture)
# ---------------------------------------------------------------------------

GEMMA_HIDDEN = 64
GEMMA_CONTEXT = 2048


def write_tiny_gemma_embedding(path: Path, *, with_dense: bool = False) -> Path:
    """Write a 2-layer random ``gemma-embedding`` GGUF (hidden size 64) to ``path``.

    With ``with_dense`` it also carries the sentence-transformers Dense
    projections (``dense_2``: 64→128, ``dense_3``: 128→64), as a real
    EmbeddingGemma GGUF converted with them does.
    """
    path = Path(path)
    rng = np.random.default_rng(1234)
    n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff = GEMMA_HIDDEN, 2, 2, 1, 32, 128
    tokens, scores, types = _spm_vocab(GEMMA_SPECIALS)
    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.GEMMA_EMBEDDING]
    tmp = path.with_name(path.name + ".tmp")
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name("tiny-gemma-embedding-dense" if with_dense else "tiny-gemma-embedding")
    w.add_context_length(GEMMA_CONTEXT)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1_000_000.0)
    w.add_rope_freq_base_swa(10_000.0)
    w.add_sliding_window(512)
    # Needed below 6 layers: llama.cpp's default pattern (5 local : 1 global)
    # leaves no global layer and aborts with GGML_ASSERT(buffer).
    w.add_sliding_window_pattern(2)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    _write_spm_tokenizer(w, tokens, scores, types, bos=2, eos=1, unk=3, pad=0,
                         add_bos=True, add_eos=True)

    w.add_tensor("token_embd.weight", _rand(rng, len(tokens), n_embd, std=0.5))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    for b in range(n_layer):
        p = f"blk.{b}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "attn_q.weight", _rand(rng, n_head * head_dim, n_embd))
        w.add_tensor(p + "attn_k.weight", _rand(rng, n_head_kv * head_dim, n_embd))
        w.add_tensor(p + "attn_v.weight", _rand(rng, n_head_kv * head_dim, n_embd))
        w.add_tensor(p + "attn_q_norm.weight", np.ones(head_dim, np.float32))
        w.add_tensor(p + "attn_k_norm.weight", np.ones(head_dim, np.float32))
        w.add_tensor(p + "attn_output.weight", _rand(rng, n_embd, n_head * head_dim))
        w.add_tensor(p + "post_attention_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_gate.weight", _rand(rng, n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", _rand(rng, n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", _rand(rng, n_embd, n_ff))
        w.add_tensor(p + "post_ffw_norm.weight", np.ones(n_embd, np.float32))
    if with_dense:
        n_dense = 2 * n_embd
        w.add_dense_features_dims("dense_2", n_embd, n_dense)
        w.add_dense_features_dims("dense_3", n_dense, n_embd)
        w.add_tensor("dense_2.weight", _rand(rng, n_dense, n_embd))
        w.add_tensor("dense_3.weight", _rand(rng, n_embd, n_dense))
    return _finish(w, path, tmp)


# ---------------------------------------------------------------------------
# llama chat model (not an embedding model)
# ---------------------------------------------------------------------------


def write_tiny_llama_chat(path: Path) -> Path:
    """Write a 2-layer random causal ``llama`` chat GGUF with a ChatML template.

    ``Llama.create_chat_completion`` runs on it (producing gibberish), and the
    embedder must refuse it as "a language model, not an embedding model".
    """
    path = Path(path)
    rng = np.random.default_rng(4321)
    n_embd, n_layer, n_head, n_ff = 64, 2, 4, 128
    head_dim = n_embd // n_head
    specials = GEMMA_SPECIALS + CHATML_SPECIALS
    tokens, scores, types = _spm_vocab(specials)
    tmp = path.with_name(path.name + ".tmp")
    w = gguf.GGUFWriter(tmp, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    w.add_name("tiny-llama-chat")
    w.add_context_length(512)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    im_end = tokens.index("<|im_end|>")
    _write_spm_tokenizer(w, tokens, scores, types, bos=2, eos=im_end, unk=3, pad=0,
                         add_bos=True, add_eos=False)
    w.add_chat_template(CHATML_TEMPLATE)

    w.add_tensor("token_embd.weight", _rand(rng, len(tokens), n_embd))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", _rand(rng, len(tokens), n_embd))
    for b in range(n_layer):
        p = f"blk.{b}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "attn_q.weight", _rand(rng, n_embd, n_embd))
        w.add_tensor(p + "attn_k.weight", _rand(rng, n_embd, n_embd))
        w.add_tensor(p + "attn_v.weight", _rand(rng, n_embd, n_embd))
        w.add_tensor(p + "attn_output.weight", _rand(rng, n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_gate.weight", _rand(rng, n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", _rand(rng, n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", _rand(rng, n_embd, n_ff))
    return _finish(w, path, tmp)
