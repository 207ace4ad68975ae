"""Embedding models: the Embedder protocol and the llama.cpp GGUF embedder.

Texts are embedded locally from a GGUF file through llama-cpp-python.  A
*profile* says how a model family wants its input (prompt templates), how many
tokens it reads and which output sizes it supports (Matryoshka truncation).

Importing this module is cheap: llama_cpp, numpy and gguf are imported only
when a model is inspected or loaded, so ``memstore --help`` never touches
llama.cpp.

llama.cpp aborts the whole process (``GGML_ASSERT``) on some inputs, for
example a sequence longer than its batch.  Nothing we pass it can do that:
every input is tokenised here, truncated to the profile's token limit (keeping
the final ``[SEP]``/``<eos>``), and fed to the model as tokens.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from memstore.errors import ModelError, UsageError

if TYPE_CHECKING:
    import numpy as np
    from llama_cpp import Llama

__all__ = [
    "Embedder", "Profile", "PROFILES", "ModelInfo", "GGUFEmbedder",
    "read_model_info", "load_embedder", "LONG_TEXT_MODES",
]

#: How texts longer than the profile's token limit are handled.
LONG_TEXT_MODES = ("truncate", "chunk")

_PULL_HINT = "run `memstore model pull` or pass --model PATH"
_SAMPLE_BYTES = 4 << 20  # fingerprint reads the first and last 4 MiB of the file
_GENERIC_MAX_TOKENS = 512
#: Environment variable that sets llama.cpp's thread count (default: all cores).
THREADS_ENV = "MEMSTORE_THREADS"
# llama.cpp pooling types that give one vector per sequence: mean, cls, last.
_SEQUENCE_POOLING = (1, 2, 3)


# ---------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """How a model family is prompted, how much it reads, what sizes it emits.

    In :data:`PROFILES` ``max_tokens`` may be None ("from the model") and
    ``dims`` lists the family's Matryoshka sizes.  An embedder's own profile is
    resolved against its model: ``max_tokens`` is set and ``dims`` lists the
    sizes that model supports, native size first.
    """

    name: str
    query_prompt: str
    document_prompt: str
    max_tokens: int | None
    dims: tuple[int, ...]

    def query_input(self, text: str) -> str:
        """``text`` wrapped in the query prompt."""
        return self.query_prompt.format(text=text)

    def document_input(self, text: str, title: str | None = None) -> str:
        """``text`` wrapped in the document prompt; a missing title reads "none"."""
        return self.document_prompt.format(text=text, title=title or "none")


PROFILES: dict[str, Profile] = {
    "embeddinggemma": Profile(
        name="embeddinggemma",
        query_prompt="task: search result | query: {text}",
        document_prompt="title: {title} | text: {text}",
        max_tokens=2048,
        dims=(768, 512, 256, 128),
    ),
    "generic": Profile(
        name="generic",
        query_prompt="{text}",
        document_prompt="{text}",
        max_tokens=None,  # min(model's training context, 512)
        dims=(),
    ),
}

# Architectures whose GGUF maps to a profile other than "generic".
_ARCH_PROFILES = {"gemma-embedding": "embeddinggemma"}


def _allowed_dims(profile: Profile, native: int) -> tuple[int, ...]:
    """Output sizes a model of ``native`` width supports under ``profile``.

    A Matryoshka family lists its sizes for its reference width (768 for
    EmbeddingGemma).  A model of another width in the same family (a test
    model, a future size) cannot use that list, so it gets halvings of its
    own width instead: 64 → (64, 32, 16, 8).
    """
    if not profile.dims:
        return (native,)
    if native in profile.dims:
        return tuple(d for d in profile.dims if d <= native)
    return tuple(d for d in (native, native // 2, native // 4, native // 8) if d >= 1)


def _resolve_profile(profile: Profile, info: ModelInfo) -> Profile:
    max_tokens = profile.max_tokens or min(info.context_length or _GENERIC_MAX_TOKENS,
                                           _GENERIC_MAX_TOKENS)
    if info.context_length:
        max_tokens = min(max_tokens, info.context_length)
    return dataclasses.replace(profile, max_tokens=max_tokens,
                               dims=_allowed_dims(profile, info.embedding_length))


# ---------------------------------------------------------------------------
# GGUF metadata
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    """What a GGUF file says about itself, read without loading llama.cpp."""

    path: Path
    size: int
    architecture: str
    name: str
    embedding_length: int
    context_length: int | None
    pooling_type: int | None
    causal: bool | None
    #: The sentence-transformers Dense projection is in the file
    #: (``dense_2.weight``).  An EmbeddingGemma GGUF without it returns the
    #: pooled vector from before the projection, which differs from
    #: sentence-transformers' output.
    has_dense: bool
    file_type: str | None
    is_embedding_model: bool
    profile: str


class _NotGGUF(Exception):
    pass


# GGUF value types → struct format (numbers), 8 = string, 9 = array.
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                 10: "Q", 11: "q", 12: "d"}


class _GGUFHeader:
    """A minimal GGUF header parser.

    gguf.GGUFReader builds a numpy view per vocabulary entry and took 12 s on
    EmbeddingGemma's 262k-token vocabulary; this reads the scalars and tensor
    names, skips arrays, and takes a fraction of that.
    """

    def __init__(self, buf: mmap.mmap | bytes) -> None:
        self.buf, self.pos = buf, 0
        if self._raw(4) != b"GGUF":
            raise _NotGGUF("bad magic")
        version = self._num("I")
        if version not in (2, 3):
            raise _NotGGUF(f"unsupported GGUF version {version}")
        n_tensors, n_kv = self._num("Q"), self._num("Q")
        self.metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = self._str()
            self.metadata[key] = self._value(self._num("I"))
        self.tensors: list[str] = []
        for _ in range(n_tensors):
            self.tensors.append(self._str())
            n_dims = self._num("I")
            self.pos += 8 * n_dims + 4 + 8  # dims, type, offset

    def _raw(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise _NotGGUF("truncated header")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def _num(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self._raw(size))[0]

    def _str(self) -> str:
        return self._raw(self._num("Q")).decode("utf-8", "replace")

    def _value(self, vtype: int) -> Any:
        if vtype == 8:
            return self._str()
        if vtype in _GGUF_SCALARS:
            return self._num(_GGUF_SCALARS[vtype])
        if vtype == 9:
            self._skip_array(self._num("I"), self._num("Q"))
            return None
        raise _NotGGUF(f"unknown value type {vtype}")

    def _skip_array(self, etype: int, n: int) -> None:
        if etype in _GGUF_SCALARS:
            self.pos += n * struct.calcsize("<" + _GGUF_SCALARS[etype])
        elif etype == 8:
            unpack, buf = struct.Struct("<Q").unpack_from, self.buf
            for _ in range(n):
                self.pos += 8 + unpack(buf, self.pos)[0]
        else:
            for _ in range(n):
                self._value(etype)
        if self.pos > len(self.buf):
            raise _NotGGUF("truncated header")


def _file_type_name(value: Any) -> str | None:
    if value is None:
        return None
    import gguf

    try:
        name = gguf.LlamaFileType(int(value)).name
    except ValueError:
        return str(value)
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


def read_model_info(path: str | Path) -> ModelInfo:
    """Read a GGUF file's metadata and classify it; llama.cpp is not loaded.

    Raises :class:`ModelError` if the file is missing or is not a GGUF file.
    """
    return _read_model(path)[0]


def _read_model(path: str | Path) -> tuple[ModelInfo, dict[str, Any]]:
    """The file's ModelInfo and its raw metadata scalars."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"model file {path} does not exist; {_PULL_HINT}")
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            header = _GGUFHeader(buf)
            size = len(buf)
    except (_NotGGUF, OSError, ValueError, struct.error, OverflowError) as exc:
        raise ModelError(f"{path} is not a GGUF model file ({exc})") from None
    return _classify(path, size, header), header.metadata


def _classify(path: Path, size: int, header: _GGUFHeader) -> ModelInfo:
    meta = header.metadata
    arch = str(meta.get("general.architecture") or "unknown")
    pooling = meta.get(f"{arch}.pooling_type")
    causal = meta.get(f"{arch}.attention.causal")
    is_embedding = pooling in _SEQUENCE_POOLING
    return ModelInfo(
        path=path,
        size=size,
        architecture=arch,
        name=str(meta.get("general.name") or path.stem),
        embedding_length=int(meta.get(f"{arch}.embedding_length") or 0),
        context_length=meta.get(f"{arch}.context_length"),
        pooling_type=pooling,
        causal=None if causal is None else bool(causal),
        has_dense="dense_2.weight" in header.tensors,
        file_type=_file_type_name(meta.get("general.file_type")),
        is_embedding_model=is_embedding,
        profile=_ARCH_PROFILES.get(arch, "generic"),
    )


def _check_embedding_model(info: ModelInfo, meta: dict[str, Any]) -> None:
    """Refuse files llama.cpp would misuse or abort on."""
    if info.is_embedding_model:
        if (info.architecture == "gemma-embedding"
                and (meta.get("gemma-embedding.block_count") or 0) < 6
                and "gemma-embedding.attention.sliding_window_pattern" not in meta):
            # llama.cpp's default 5:1 local/global pattern leaves such a model
            # without a global layer and aborts with GGML_ASSERT(buffer).
            raise ModelError(f"{info.path} has fewer than 6 layers and no "
                             "sliding_window_pattern; re-convert it with that key set")
        return
    if info.pooling_type is None and info.causal is not False:
        raise ModelError(
            f"{info.path} is a {info.architecture} language model, not an embedding model; "
            "use an embedding GGUF such as EmbeddingGemma (memstore model pull)")
    raise ModelError(
        f"{info.path} ({info.architecture}) has pooling type {info.pooling_type}, so it "
        "gives no sentence vectors; use an embedding GGUF with mean, CLS or last-token "
        "pooling, such as EmbeddingGemma (memstore model pull)")


def _file_sample_digest(path: Path, size: int) -> bytes:
    """sha256 of the size plus first and last 4 MiB: fast, equal for copies."""
    sha = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        sha.update(f.read(_SAMPLE_BYTES))
        f.seek(max(0, size - _SAMPLE_BYTES))
        sha.update(f.read(_SAMPLE_BYTES))
    return sha.digest()


# ---------------------------------------------------------------------------
# Embedders
# ---------------------------------------------------------------------------


class Embedder(Protocol):
    """Anything that turns texts into unit-length float32 vectors."""

    model_id: str
    dim: int
    fingerprint: str
    profile: Profile

    def query_input(self, text: str) -> str:
        """The model input for a search query (prompt applied)."""
        ...

    def document_input(self, text: str, title: str | None = None) -> str:
        """The model input for a stored document (prompt applied)."""
        ...

    def embed_inputs(self, inputs: Sequence[str]) -> tuple[np.ndarray, int]:
        """Embed already-prompted inputs: ((n, dim) float32 unit rows, tokens fed)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries."""
        ...

    def embed_documents(self, texts: Sequence[str],
                        titles: Sequence[str | None] | None = None) -> np.ndarray:
        """Embed documents, each with an optional title."""
        ...


class GGUFEmbedder:
    """An :class:`Embedder` backed by a GGUF model in llama-cpp-python.

    Create it with :func:`load_embedder`.  Each input is tokenised once,
    truncated (or chunked) to ``profile.max_tokens``, and run through the model
    on its own: one sequence per llama.cpp call is the fastest way on CPU,
    because a multi-sequence batch of a non-causal model computes attention
    over the whole batch.

    Empty or whitespace-only text is embedded as it is: the model sees only
    its special tokens (``[CLS] [SEP]``, ``<bos> <eos>``) and returns a valid
    vector, so every item gets one.

    Not thread-safe: the llama.cpp context is reused by every call.
    """

    def __init__(self, info: ModelInfo, profile: Profile, dim: int, long_text: str,
                 n_threads: int) -> None:
        self.info = info
        self.profile = profile
        self.dim = dim
        self.long_text = long_text
        self.n_threads = n_threads
        self.model_id = info.name
        self.fingerprint = self._fingerprint()
        self._llm = self._load_llama()
        self._init_tokens()
        self._init_batch()

    # -- setup --------------------------------------------------------------

    def _fingerprint(self) -> str:
        p = self.profile
        fields: dict[str, Any] = {
            "profile": p.name, "query_prompt": p.query_prompt,
            "document_prompt": p.document_prompt, "dim": self.dim, "max_tokens": p.max_tokens,
        }
        if self.long_text != "truncate":  # chunking changes long texts' vectors
            fields["long_text"] = self.long_text
        sha = hashlib.sha256(_file_sample_digest(self.info.path, self.info.size))
        sha.update(json.dumps(fields, sort_keys=True).encode())
        return sha.hexdigest()

    def _load_llama(self) -> Llama:
        from llama_cpp import Llama

        n = int(self.profile.max_tokens or _GENERIC_MAX_TOKENS)
        threads = self.n_threads
        try:
            # n_ctx = n_batch = n_ubatch: an encoder needs the whole sequence
            # in one micro-batch, and nothing larger (cost grows with it).
            return Llama(str(self.info.path), embedding=True, verbose=False,
                         n_ctx=n, n_batch=n, n_ubatch=n,
                         n_threads=threads, n_threads_batch=threads)
        except (ValueError, RuntimeError, OSError):
            raise ModelError(f"llama.cpp could not load {self.info.path}; the file may be "
                             "incomplete or damaged: download it again (memstore model pull)"
                             ) from None

    def _init_tokens(self) -> None:
        """Learn which special tokens the model wraps around a text."""
        self._vocab = self._llm._model.vocab
        probe = b"hello world"
        bare = self._llm.tokenize(probe, add_bos=False, special=False)
        full = self._llm.tokenize(probe, add_bos=True, special=False)
        for i in range(len(full) - len(bare) + 1):
            if full[i:i + len(bare)] == bare:
                self._head, self._tail = full[:i], full[i + len(bare):]
                break
        else:  # tokenizer merges across the special tokens: not seen in practice
            self._head, self._tail = full[:1], []
        self._budget = int(self.profile.max_tokens or 0) - len(self._head) - len(self._tail)
        if self._budget < 1:
            raise ModelError(f"{self.info.path}: context of {self.profile.max_tokens} tokens "
                             "is too small for any text")
        # A model that adds no special tokens still needs one token for "".
        self._empty = self._head + self._tail or [max(self._llm.token_bos(), 0)]

    def _init_batch(self) -> None:
        import llama_cpp
        import numpy as np

        n = int(self.profile.max_tokens or 0)
        self._n_out = int(llama_cpp.llama_model_n_embd_out(self._llm._model.model)) \
            or self._llm.n_embd()
        self._batch = llama_cpp.llama_batch_init(n, 0, 1)
        batch = self._batch
        # Positions, sequence ids and output flags never change: set them
        # once, so a call only copies the token ids in.
        for i in range(n):
            batch.seq_id[i][0] = 0
        np.ctypeslib.as_array(batch.pos, shape=(n,))[:] = np.arange(n)
        np.ctypeslib.as_array(batch.n_seq_id, shape=(n,))[:] = 1
        # Embedding mode wants every token marked as an output.
        np.ctypeslib.as_array(batch.logits, shape=(n,))[:] = 1
        self._batch_tokens = np.ctypeslib.as_array(batch.token, shape=(n,))
        if self._n_out < self.dim:
            raise ModelError(f"{self.info.path} outputs {self._n_out} dimensions but its "
                             f"metadata says {self.info.embedding_length}; re-convert it")
        self._memory = llama_cpp.llama_get_memory(self._llm._ctx.ctx)

    def close(self) -> None:
        """Free the model and its context now rather than at garbage collection."""
        import llama_cpp

        if getattr(self, "_batch", None) is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_llm", None) is not None:
            self._llm.close()
            self._llm = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @property
    def path(self) -> Path:
        """The model file."""
        return self.info.path

    # -- prompts ------------------------------------------------------------

    def query_input(self, text: str) -> str:
        """``text`` in the profile's query prompt."""
        return self.profile.query_input(text)

    def document_input(self, text: str, title: str | None = None) -> str:
        """``text`` in the profile's document prompt (title "none" if absent)."""
        return self.profile.document_input(text, title)

    # -- tokens -------------------------------------------------------------

    def _tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens, in one tokenizer pass."""
        import llama_cpp

        # errors="replace": a lone surrogate would make invalid UTF-8, and
        # llama.cpp's tokenizer throws a C++ exception on that (an abort).
        data = text.encode("utf-8", "replace")
        # Size the buffer from the input (every token covers at least one
        # byte) rather than the context, as Llama.tokenize does: a text with
        # more tokens than the context would be tokenised twice.
        cap = len(data) + 8
        buf = (llama_cpp.llama_token * cap)()
        n = llama_cpp.llama_tokenize(self._vocab, data, len(data), buf, cap, False, False)
        if n < 0:  # not expected; let the library retry with the exact size
            return self._llm.tokenize(data, add_bos=False, special=False)
        return buf[:n]

    def _content_tokens(self, text: str, limit: int | None) -> list[int]:
        """The text's tokens without specials, at most ``limit`` of them.

        Cuts the text before tokenising so a 1 MB input costs no more than a
        short one.  The cut is generous (8 characters per token, 4× more each
        retry), and a cut text must yield a margin of extra tokens, because
        the word split by the cut may tokenise differently.
        """
        if limit is None:
            return self._tokenize(text)
        margin = 16
        cut = (limit + margin) * 8
        while True:
            tokens = self._tokenize(text[:cut])
            if cut >= len(text) or len(tokens) > limit + margin:
                return tokens[:limit]
            cut *= 4

    def tokens(self, text: str) -> list[int]:
        """The token ids fed to the model for an input in truncate mode."""
        return self._head + self._content_tokens(text, self._budget) + self._tail

    def _windows(self, text: str) -> list[list[int]]:
        """Model inputs for one text: one window, or several in chunk mode."""
        if self.long_text == "truncate":
            content = self._content_tokens(text, self._budget)
            return [self._head + content + self._tail if content else self._empty]
        content = self._tokenize(text)
        if not content:
            return [self._empty]
        step = self._budget
        return [self._head + content[i:i + step] + self._tail
                for i in range(0, len(content), step)]

    # -- model calls --------------------------------------------------------

    def _run(self, tokens: Sequence[int]) -> np.ndarray:
        """Pooled embedding of one token sequence (len ≤ max_tokens)."""
        import llama_cpp
        import numpy as np

        if self._llm is None:
            raise ModelError("this embedder was closed; load the model again")
        n = len(tokens)
        self._batch_tokens[:n] = tokens
        self._batch.n_tokens = n
        if self._memory:  # causal embedding models keep a KV cache
            llama_cpp.llama_memory_clear(self._memory, True)
        rc = llama_cpp.llama_decode(self._llm._ctx.ctx, self._batch)
        if rc != 0:
            raise ModelError(f"llama.cpp failed to embed a {n}-token input (code {rc})")
        ptr = llama_cpp.llama_get_embeddings_seq(self._llm._ctx.ctx, 0)
        if not ptr:
            raise ModelError(f"{self.info.path} returned no pooled embedding; "
                             "it needs a pooling type in its GGUF metadata")
        return np.ctypeslib.as_array(ptr, shape=(self._n_out,)).copy()

    def _embed_one(self, text: str) -> tuple[np.ndarray, int]:
        import numpy as np

        windows = self._windows(text)
        if len(windows) == 1:
            return self._run(windows[0]), len(windows[0])
        vecs = np.stack([_unit(self._run(w)) for w in windows])
        weights = np.array([len(w) for w in windows], dtype=np.float32)
        return weights @ vecs, int(weights.sum())

    def embed_inputs(self, inputs: Sequence[str]) -> tuple[np.ndarray, int]:
        """Embed already-prompted inputs.

        Returns an ``(len(inputs), dim)`` float32 array of unit-length rows
        (truncated to ``dim`` first, then normalised) and the number of tokens
        fed to the model.
        """
        import numpy as np

        out = np.empty((len(inputs), self.dim), dtype=np.float32)
        total = 0
        for i, text in enumerate(inputs):
            vec, n = self._embed_one(text)
            out[i] = _unit(vec[:self.dim])
            total += n
        return out, total

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (query prompt applied)."""
        return self.embed_inputs([self.query_input(t) for t in texts])[0]

    def embed_documents(self, texts: Sequence[str],
                        titles: Sequence[str | None] | None = None) -> np.ndarray:
        """Embed documents (document prompt applied, with ``titles`` if given)."""
        if titles is None:
            titles = [None] * len(texts)
        elif len(titles) != len(texts):
            raise UsageError(f"got {len(titles)} titles for {len(texts)} documents; "
                             "pass one title (or None) per document")
        return self.embed_inputs([self.document_input(t, h) for t, h in zip(texts, titles)])[0]

    def __repr__(self) -> str:
        return (f"GGUFEmbedder({self.model_id!r}, profile={self.profile.name!r}, "
                f"dim={self.dim}, max_tokens={self.profile.max_tokens})")


def _unit(vec: np.ndarray) -> np.ndarray:
    import numpy as np

    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm > 0 else vec).astype(np.float32, copy=False)


def load_embedder(path: str | Path, *, profile: str | None = None, dim: int | None = None,
                  long_text: str = "truncate", n_threads: int | None = None) -> GGUFEmbedder:
    """Load the GGUF embedding model at ``path``.

    ``profile`` overrides the profile detected from the architecture; ``dim``
    picks a smaller Matryoshka output size (one of the resolved profile's
    ``dims``); ``long_text`` is ``"truncate"`` (keep the first max_tokens
    tokens) or ``"chunk"`` (embed max_tokens windows and average them).
    ``n_threads`` defaults to ``$MEMSTORE_THREADS``, else every core.
    Raises :class:`ModelError` for a missing or unsuitable file and
    :class:`UsageError` for a bad option.
    """
    if long_text not in LONG_TEXT_MODES:
        raise UsageError(f"long_text must be one of {', '.join(LONG_TEXT_MODES)}, "
                         f"not {long_text!r}")
    if profile is not None and profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    threads = _thread_count(n_threads)
    info, meta = _read_model(path)
    _check_embedding_model(info, meta)
    resolved = _resolve_profile(PROFILES[profile or info.profile], info)
    if dim is None:
        dim = resolved.dims[0]
    elif dim not in resolved.dims:
        raise UsageError(f"dimension {dim} is not available for {info.name} "
                         f"(profile {resolved.name}); choose one of "
                         f"{', '.join(map(str, resolved.dims))}")
    return GGUFEmbedder(info, resolved, dim, long_text, threads)


def available_cores() -> int:
    """The cores this process may run on (not the machine's total, which oversubscribes containers)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _thread_count(n_threads: int | None) -> int:
    if n_threads is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        if not env:
            return available_cores()
        try:
            n_threads = int(env)
        except ValueError:
            raise UsageError(f"{THREADS_ENV}={env!r} is not a number; set it to a thread "
                             "count such as 1, or unset it to use every core") from None
    if n_threads < 1:
        raise UsageError(f"thread count must be at least 1, not {n_threads}")
    return n_threads
