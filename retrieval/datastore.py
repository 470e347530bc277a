"""Datastore: REST (He et al. 2023, "Retrieval-Based Speculative Decoding") over a persistent
suffix index of a large token corpus.

A chat answer repeats phrases seen in earlier answers. The datastore holds a token corpus (for
example ShareGPT answers tokenized with the target's tokenizer) with its suffix array, built once
and saved to a folder. For the context's longest suffix that occurs in it (``max_suffix`` down to
``min_suffix`` tokens) it gathers what followed those occurrences; ``DatastoreDrafter`` merges them
into a trie and drafts its most frequent branches as a token tree.

Words (see also ``suffix_index``): a **continuation** is up to ``continuation_len`` tokens that
followed an occurrence, cut at its sequence's end; the **frequency** of a trie node is how many
gathered continuations pass through it.

On disk (``FORMAT_VERSION`` 1), a folder holding ``manifest.json`` and three ``.npy`` arrays whose
names carry a build id: ``corpus-<id>.npy`` ``[n]`` (int32, or int64 when an id needs it),
``suffix_array-<id>.npy`` ``[n]`` (int32 below 2^31 positions) and ``starts-<id>.npy``
``[num_sequences]`` (int64). ``save`` writes each array to a temporary file, flushes it to disk and
renames it, then replaces the manifest the same way, and only then deletes the previous build's
arrays: a save that dies midway leaves the previous datastore loadable. ``load`` memory-maps the
arrays, so opening even a large datastore is instant and lookups read only the pages they touch.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Sequence

import numpy as np

from specdraft import Draft
from specdraft.files import atomic_write, fsync_folder

from .suffix_index import SuffixIndex, SuffixMatch, build_suffix_array, concatenate_arrays
from .token_trie import TokenTrie

FORMAT = "specdraft-datastore"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
ARRAYS = ("corpus", "suffix_array", "starts")
TEMPORARY = ".tmp"  # suffix of files being written: ``.<name>.<pid>.tmp``

# Lookup defaults (REST's: the longest context suffix from 16 down to 2 tokens).
MAX_SUFFIX = 16
MIN_SUFFIX = 2
MAX_CONTINUATIONS = 64
CONTINUATION_LEN = 16


@dataclass(frozen=True)
class DatastoreLookup:
    """The matched suffix's length (0: none), how many matches it has in the corpus, and the gathered
    continuations, in suffix-array order (sorted by their tokens)."""

    suffix_len: int
    occurrences: int
    continuations: list[tuple[int, ...]]


class Datastore:
    """A token corpus with its suffix array (``SuffixIndex``) and a manifest describing it."""

    def __init__(self, index: SuffixIndex, manifest: dict) -> None:
        self.index = index
        self.manifest = manifest

    # --- building ------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        token_sequences: Iterable[Sequence[int]],
        tokenizer: str | None = None,
        vocab_size: int | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> "Datastore":
        """Index ``token_sequences`` (each one a document or an answer; matches never span two).
        ``tokenizer`` (a model name) and ``vocab_size`` are recorded in the manifest; with
        ``vocab_size`` every id must be below it. ``progress`` receives one line per build phase."""
        builder = DatastoreBuilder(tokenizer, vocab_size)
        for sequence in token_sequences:
            builder.add(sequence)
        return builder.build(progress)

    # --- persistence -----------------------------------------------------------------------------
    def save(self, folder: str | os.PathLike) -> Path:
        """Write the datastore to ``folder`` (created if needed) atomically; returns the folder."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        build_id = uuid.uuid4().hex[:12]
        arrays = {"corpus": self.index.corpus, "suffix_array": self.index.suffix_array, "starts": self.index.starts}
        files = {name: f"{name}-{build_id}.npy" for name in ARRAYS}
        for name in ARRAYS:
            _write_atomically(folder / files[name], lambda f, a=arrays[name]: np.save(f, a, allow_pickle=False))
        manifest = {**self.manifest, "files": files}
        _write_atomically(folder / MANIFEST, lambda f: f.write(json.dumps(manifest, indent=2).encode()))
        fsync_folder(folder)
        self.manifest = manifest
        keep = set(files.values())
        for path in folder.glob("*.npy"):  # the previous build's arrays and any dead save's leftovers
            if path.name.split("-", 1)[0] in ARRAYS and path.name not in keep:
                path.unlink(missing_ok=True)
        _remove_dead_temporaries(folder)
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "Datastore":
        """Open a saved datastore with its arrays memory-mapped (read-only)."""
        folder = Path(folder)
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{folder} is not a datastore: no {MANIFEST}") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{folder / MANIFEST} is not valid JSON: {error}") from None
        if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{folder} holds format {manifest.get('format')!r} version {manifest.get('format_version')!r}; "
                f"this specdraft reads {FORMAT!r} version {FORMAT_VERSION}: rebuild it with `specdraft datastore build`"
            )
        try:
            arrays = {
                name: np.load(folder / manifest["files"][name], mmap_mode="r", allow_pickle=False) for name in ARRAYS
            }
        except (OSError, KeyError, ValueError) as error:
            raise ValueError(f"{folder} is an incomplete datastore ({error}): rebuild it") from None
        if len(arrays["corpus"]) != manifest["length"] or len(arrays["starts"]) != manifest["num_sequences"]:
            raise ValueError(f"{folder}: the arrays do not match {MANIFEST}")
        return cls(SuffixIndex(arrays["corpus"], arrays["suffix_array"], arrays["starts"]), manifest)

    # --- description ---------------------------------------------------------------------------
    @property
    def tokenizer(self) -> str | None:
        return self.manifest.get("tokenizer")

    @property
    def vocab_size(self) -> int | None:
        return self.manifest.get("vocab_size")

    @property
    def num_sequences(self) -> int:
        return self.manifest["num_sequences"]

    @property
    def num_tokens(self) -> int:
        """Tokens in the corpus, separators not counted."""
        return self.manifest["num_tokens"]

    @property
    def nbytes(self) -> int:
        """Size of the three arrays (what ``save`` writes, less the manifest and .npy headers)."""
        return sum(int(a.nbytes) for a in (self.index.corpus, self.index.suffix_array, self.index.starts))

    # --- lookup -------------------------------------------------------------------------------
    def match(
        self, context_tail: Sequence[int], max_suffix: int = MAX_SUFFIX, min_suffix: int = MIN_SUFFIX
    ) -> SuffixMatch:
        """The longest suffix of ``context_tail`` (``max_suffix`` down to ``min_suffix`` tokens) that
        occurs followed by at least one token; ``NO_MATCH`` if none does."""
        if min_suffix < 1 or max_suffix < min_suffix:
            raise ValueError(f"need 1 <= min_suffix <= max_suffix, got {min_suffix}, {max_suffix}")
        return self.index.longest_suffix_match(context_tail, max_suffix, min_suffix)

    def lookup(
        self,
        context_tail: Sequence[int],
        max_suffix: int = MAX_SUFFIX,
        min_suffix: int = MIN_SUFFIX,
        max_continuations: int = MAX_CONTINUATIONS,
        continuation_len: int = CONTINUATION_LEN,
    ) -> DatastoreLookup:
        """Continuations of the longest matching suffix of ``context_tail``: all of them when it has at
        most ``max_continuations`` matches, else ``max_continuations`` spread evenly over its
        suffix-array range (which is sorted by continuation, so frequent continuations stay
        proportionally frequent). Each is up to ``continuation_len`` tokens."""
        match = self.match(context_tail, max_suffix, min_suffix)
        if not match:
            return DatastoreLookup(0, 0, [])
        positions = self.index.positions(match, max_continuations)
        return DatastoreLookup(match.ngram, match.count, self.index.continuations(positions, continuation_len))


class DatastoreBuilder:
    """Collects token sequences, then builds a ``Datastore`` (in memory; ``save`` persists it)."""

    def __init__(self, tokenizer: str | None = None, vocab_size: int | None = None) -> None:
        if vocab_size is not None and vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self._parts: list[np.ndarray] = []
        self.num_tokens = 0

    def add(self, sequence: Sequence[int]) -> None:
        """Add one sequence (empty ones are skipped)."""
        part = np.asarray(sequence, dtype=np.int64).reshape(-1)  # [len]
        if part.size == 0:
            return
        if self.vocab_size is not None and int(part.max()) >= self.vocab_size:
            raise ValueError(f"token id {int(part.max())} is outside the vocabulary of {self.vocab_size}")
        self._parts.append(part)
        self.num_tokens += part.size

    def build(self, progress: Callable[[str], None] | None = None) -> Datastore:
        started = time.perf_counter()
        if progress is not None:
            progress(f"indexing {len(self._parts)} sequences, {self.num_tokens} tokens")
        corpus, starts = concatenate_arrays(self._parts)
        suffix_array = build_suffix_array(corpus, progress)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "tokenizer": self.tokenizer,
            "vocab_size": self.vocab_size,
            "num_sequences": len(starts),
            "num_tokens": self.num_tokens,
            "length": len(corpus),  # tokens + one separator per sequence
            "token_dtype": str(corpus.dtype),
            "index_dtype": str(suffix_array.dtype),
            "build_seconds": round(time.perf_counter() - started, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return Datastore(SuffixIndex(corpus, suffix_array, starts), manifest)


@dataclass(frozen=True)
class DatastoreDraftConfig:
    """``max_suffix`` / ``min_suffix``: the longest and shortest context suffix looked up;
    ``max_candidates``: continuations gathered per lookup; ``continuation_len``: their length (the
    budget caps it further)."""

    max_suffix: int = MAX_SUFFIX
    min_suffix: int = MIN_SUFFIX
    max_candidates: int = MAX_CONTINUATIONS
    continuation_len: int = CONTINUATION_LEN

    def __post_init__(self) -> None:
        if not 1 <= self.min_suffix <= self.max_suffix:
            raise ValueError(f"need 1 <= min_suffix <= max_suffix, got {self.min_suffix}, {self.max_suffix}")
        if self.max_candidates < 1 or self.continuation_len < 1:
            raise ValueError("max_candidates and continuation_len must be >= 1")


class DatastoreDrafter:
    """REST drafting from a shared ``Datastore`` (read-only, so one datastore serves every request).

    Each step: look up the context's tail (``Datastore.lookup``), add every continuation (cut to the
    budget) to a ``TokenTrie`` with weight 1, and draft the ``budget`` most frequent nodes. Ties: the
    shallower node, then the node created first; continuations are added in suffix-array order, so
    among equally frequent siblings the smaller token id wins. No match: an empty draft.
    """

    def __init__(self, datastore: Datastore, config: DatastoreDraftConfig = DatastoreDraftConfig()) -> None:
        self.datastore = datastore
        self.config = config

    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        if budget <= 0:
            return Draft.empty()
        config = self.config
        found = self.datastore.lookup(
            context_ids[-config.max_suffix :],
            config.max_suffix,
            config.min_suffix,
            config.max_candidates,
            min(config.continuation_len, budget),
        )
        trie = TokenTrie()
        for continuation in found.continuations:
            trie.add(continuation)
        return trie.to_draft(budget)

    def observe(self, accepted_len: int) -> None:
        pass  # stateless: every step looks the context up afresh


def _write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``atomic_write`` of ``path`` through ``.<name>.<pid>.tmp``: the pid in the name lets
    ``_remove_dead_temporaries`` tell a killed save's leftovers from a running save's file."""
    atomic_write(path, write, tmp=path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY}"))


def _remove_dead_temporaries(folder: Path) -> None:
    """Delete temporary files left by saves whose process no longer runs (killed midway)."""
    for path in folder.glob(f".*{TEMPORARY}"):
        pid = path.name[: -len(TEMPORARY)].rsplit(".", 1)[-1]
        if pid.isdigit() and not _process_alive(int(pid)):
            path.unlink(missing_ok=True)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else
        return True
    return True
