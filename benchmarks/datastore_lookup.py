"""Measure the REST datastore as it grows: build time, size on disk, load time, lookup time.

    python benchmarks/datastore_lookup.py --tokens 1000000 10000000 --out DIR

A script that writes results (``DIR/results.json``, ``DIR/results.md`` and ``DIR/results.png``, through
``result_files.write_results``), not a test.

**Corpus** (synthetic, shaped like tokenized answers): documents of 50-800 tokens (log-uniform);
tokens drawn from a Zipf law (exponent ``ZIPF_EXPONENT``) over ``--vocab-size`` ids (default
Qwen2.5's 151,936), the ranks mapped to ids by a fixed random permutation so that ids spread over the
whole range; then ``PHRASE_REUSE`` of the tokens are overwritten by copies of earlier spans of 4-32
tokens, as answers repeat phrases. The same seed gives the same corpus.

**Contexts** (``--lookups``, a third of each kind): *seen*, the 16 tokens before a random corpus
position; *partial*, such a window whose first 4-14 tokens are replaced by fresh Zipf tokens (the
match is shorter); *novel*, 16 fresh Zipf tokens. Each is timed on the saved datastore opened with
``Datastore.load`` (memory-mapped; the page cache is warm after the build): ``lookup`` with its
defaults (longest suffix of 16 down to 2 tokens, up to 64 continuations of 16 tokens), and
``DatastoreDrafter.propose(context, 16)`` (lookup, trie, draft of 16 nodes).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from specdraft.apps.bench.result_files import write_results
from specdraft.retrieval.datastore import MAX_SUFFIX, Datastore, DatastoreDrafter

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ZIPF_EXPONENT = 1.1
PHRASE_REUSE = 0.3  # fraction of tokens that copy an earlier span
SPAN_TOKENS = (4, 32)  # inclusive
DOCUMENT_TOKENS = (50, 800)
DRAFT_BUDGET = 16
QWEN_VOCAB = 151_936


class ZipfTokens:
    """Token ids whose ranks follow a Zipf law; rank r (1-based) has probability ~ r^-exponent."""

    def __init__(self, vocab_size: int, rng: np.random.Generator) -> None:
        weights = np.arange(1, vocab_size + 1, dtype=np.float64) ** -ZIPF_EXPONENT  # [V]
        self.cdf = np.cumsum(weights / weights.sum())  # [V]
        self.ids = rng.permutation(vocab_size)  # [V] rank -> token id
        self.rng = rng

    def sample(self, n: int) -> np.ndarray:
        ranks = np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), len(self.ids) - 1)  # [n]
        return self.ids[ranks]


def synthetic_corpus(num_tokens: int, zipf: ZipfTokens, rng: np.random.Generator) -> list[np.ndarray]:
    """Documents totalling ``num_tokens`` tokens (see the module docstring)."""
    tokens = zipf.sample(num_tokens)  # [n]
    mean_span = sum(SPAN_TOKENS) / 2
    num_spans = int(PHRASE_REUSE * num_tokens / mean_span)
    lengths = rng.integers(SPAN_TOKENS[0], SPAN_TOKENS[1] + 1, size=num_spans)  # [S]
    targets = np.sort(rng.integers(2 * SPAN_TOKENS[1], num_tokens - SPAN_TOKENS[1], size=num_spans))  # [S]
    for target, length, fraction in zip(targets.tolist(), lengths.tolist(), rng.random(num_spans).tolist()):
        source = int(fraction * (target - length))  # an earlier span, copied forward
        tokens[target : target + length] = tokens[source : source + length]
    low, high = np.log(DOCUMENT_TOKENS[0]), np.log(DOCUMENT_TOKENS[1])
    doc_lengths = np.exp(rng.uniform(low, high, size=num_tokens // DOCUMENT_TOKENS[0] + 1)).astype(np.int64)
    cuts = np.cumsum(doc_lengths)
    return np.split(tokens, cuts[cuts < num_tokens])


def contexts(corpus: np.ndarray, zipf: ZipfTokens, count: int, rng: np.random.Generator) -> list[tuple[str, list[int]]]:
    """``count`` (kind, 16-token context) pairs: seen, partial and novel in turn."""
    out = []
    for i in range(count):
        kind = ("seen", "partial", "novel")[i % 3]
        if kind == "novel":
            out.append((kind, zipf.sample(MAX_SUFFIX).tolist()))
            continue
        end = int(rng.integers(MAX_SUFFIX, len(corpus)))
        window = corpus[end - MAX_SUFFIX : end].copy()
        if kind == "partial":
            replaced = int(rng.integers(4, 15))
            window[:replaced] = zipf.sample(replaced)
        out.append((kind, window.tolist()))
    return out


def _timed(function, *args) -> tuple[object, float]:
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def _summary(seconds: list[float]) -> dict:
    ms = np.asarray(seconds) * 1e3
    return {
        "mean_ms": float(ms.mean()),
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "max_ms": float(ms.max()),
    }


def measure(num_tokens: int, vocab_size: int, lookups: int, seed: int, folder: Path) -> dict:
    """Build, save, load and time lookups for one corpus size; returns one results row."""
    rng = np.random.default_rng(seed)
    zipf = ZipfTokens(vocab_size, rng)
    documents, generate_s = _timed(synthetic_corpus, num_tokens, zipf, rng)
    datastore, build_s = _timed(Datastore.build, documents, None, vocab_size)
    _, save_s = _timed(datastore.save, folder)
    disk_bytes = sum(path.stat().st_size for path in folder.iterdir())
    loaded, load_s = _timed(Datastore.load, folder)
    queries = contexts(np.asarray(datastore.index.corpus), zipf, lookups, rng)
    del datastore, documents
    drafter = DatastoreDrafter(loaded)
    for _, context in queries[:20]:  # warm-up
        loaded.lookup(context)
    lookup_s, propose_s, suffix_lens, by_kind = [], [], [], {}
    for kind, context in queries:
        found, seconds = _timed(loaded.lookup, context)
        lookup_s.append(seconds)
        suffix_lens.append(found.suffix_len)
        by_kind.setdefault(kind, []).append(found.suffix_len)
        propose_s.append(_timed(drafter.propose, context, DRAFT_BUDGET)[1])
    return {
        "tokens": loaded.num_tokens,
        "documents": loaded.num_sequences,
        "vocab_size": vocab_size,
        "token_dtype": loaded.manifest["token_dtype"],
        "index_dtype": loaded.manifest["index_dtype"],
        "generate_corpus_s": generate_s,
        "build_s": build_s,
        "save_s": save_s,
        "load_s": load_s,
        "disk_bytes": disk_bytes,
        "lookups": len(queries),
        "lookup": _summary(lookup_s),
        "propose": _summary(propose_s),
        "mean_suffix_len": float(np.mean(suffix_lens)),
        "hit_rate": float(np.mean(np.asarray(suffix_lens) > 0)),
        "mean_suffix_len_by_kind": {kind: float(np.mean(lens)) for kind, lens in by_kind.items()},
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| tokens | build (s) | on disk (MB) | load (ms) | lookup mean / p95 (ms) | propose mean / p95 (ms) | matched "
        "suffix (mean tokens) | hit rate |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['tokens']:,} | {r['build_s']:.1f} | {r['disk_bytes'] / 1e6:.1f} | {r['load_s'] * 1e3:.1f} | "
            f"{r['lookup']['mean_ms']:.3f} / {r['lookup']['p95_ms']:.3f} | {r['propose']['mean_ms']:.3f} / "
            f"{r['propose']['p95_ms']:.3f} | {r['mean_suffix_len']:.1f} | {r['hit_rate']:.0%} |"
        )
    return "\n".join(lines) + "\n"


def draw(rows: list[dict], fig: Figure) -> None:
    """Lookup and propose time (mean, p95) and build time against the corpus size."""
    fig.set_size_inches(10, 4)
    left, right = fig.subplots(1, 2)
    tokens = [r["tokens"] for r in rows]
    for name, color in (("lookup", "#4C72B0"), ("propose", "#55A868")):
        left.plot(tokens, [r[name]["mean_ms"] for r in rows], marker="o", color=color, label=f"{name} mean")
        left.plot(
            tokens, [r[name]["p95_ms"] for r in rows], marker="x", linestyle="--", color=color, label=f"{name} p95"
        )
    left.set_ylabel("ms per call")
    left.legend()
    right.plot(tokens, [r["build_s"] for r in rows], marker="o", color="#C44E52")
    right.set_ylabel("build (s)", color="#C44E52")
    disk = right.twinx()
    disk.plot(tokens, [r["disk_bytes"] / 1e6 for r in rows], marker="s", color="#8172B2")
    disk.set_ylabel("on disk (MB)", color="#8172B2")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xlabel("corpus tokens")
        axis.grid(alpha=0.3)
    fig.suptitle("REST datastore: lookup and build cost by corpus size")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/datastore_lookup.py",
        description="Build synthetic Zipf corpora of the given sizes as REST datastores and measure build time, size "
        "on disk and lookup time.",
    )
    parser.add_argument(
        "--tokens", type=int, nargs="+", default=[1_000_000, 10_000_000], help="corpus sizes (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for results.json, results.md and results.png")
    parser.add_argument(
        "--vocab-size", type=int, default=QWEN_VOCAB, help="token ids drawn from [0, N) (default: %(default)s)"
    )
    parser.add_argument("--lookups", type=int, default=1000, help="timed contexts per corpus (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the datastores under OUT (deleted by default)")
    args = parser.parse_args(argv)
    if min(args.tokens) < 10 * DOCUMENT_TOKENS[1]:
        parser.error(f"--tokens must each be at least {10 * DOCUMENT_TOKENS[1]}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for num_tokens in args.tokens:
        folder = args.out / f"datastore-{num_tokens}"
        print(f"measuring {num_tokens:,} tokens ...", file=sys.stderr, flush=True)
        rows.append(measure(num_tokens, args.vocab_size, args.lookups, args.seed, folder))
        if not args.keep:
            shutil.rmtree(folder)
    machine = {
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }
    table = markdown(rows)
    write_results(args.out, {"machine": machine, "results": rows}, table, partial(draw, rows))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
