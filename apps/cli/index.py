"""`specdraft index build|add`: build a document index from a JSONL file, or add documents to one.

The JSONL file holds one document a line: `{"id": "...", "text": "...", "metadata": {...}}`
(`metadata` optional; blank lines are skipped). Every line is checked before anything is embedded or
written: bad JSON, a line that is not an object, a missing or empty text, a bad or repeated id (in the
file or, for `add`, already in the index) stops the command with exit code 2 and a message that
names the line, and leaves the output folder as it was. A summary (documents, chunks, seconds) goes
to standard error.

`index build --store STORE --out PATH` writes the chunks into a collection of a vector store instead
(`specdraft.retrieval.stores.build_store`; PATH is the store's folder or Milvus Lite file,
`--collection` the collection): chunked and embedded as an index would be, every line checked
first; an existing collection is refused unless `--overwrite`, and a write that fails removes what
it wrote. `--kind` and `--nlist` are the FAISS index's and do not apply there.
`index add --store STORE --index PATH` adds the documents to an existing collection
(`add_to_store`): ids must be new in the collection too, and a write that fails deletes what it wrote.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from .store_args import add_store_args, store_config
from .text_files import read_utf8

EXIT_BAD_INPUT = 2


def add_index_parser(subparsers: Any) -> None:
    """Add `index` with its `build` and `add` actions to the `specdraft` subcommands."""
    from specdraft.retrieval.embedder import DEFAULT_EMBEDDER, EmbedderConfig
    from specdraft.retrieval.index import KINDS, IndexConfig

    defaults = IndexConfig()
    index = subparsers.add_parser(
        "index",
        help="build or extend a document index for retrieval (FAISS + sentence-transformers)",
        description='Build a document index from a JSONL file (one {"id", "text", "metadata"?} object a line), or add '
        "documents to an existing one. Documents are cut into overlapping chunks of words, embedded and stored in "
        "FAISS; "
        "the folder is replaced atomically, so an interrupted command leaves the previous index intact.",
    )
    actions = index.add_subparsers(dest="index_command", required=True, metavar="ACTION")

    build = actions.add_parser(
        "build",
        help="build a new index from a JSONL file of documents",
        description="Build a new document index in DIR from FILE.jsonl.",
    )
    build.add_argument(
        "--docs", required=True, type=Path, metavar="FILE.jsonl", help="documents, one JSON object a line"
    )
    build.add_argument("--out", required=True, type=Path, metavar="DIR", help="the index folder to write")
    build.add_argument(
        "--kind", choices=KINDS, default=defaults.kind, help="flat (exact), ivf or hnsw (default: %(default)s)"
    )
    build.add_argument(
        "--chunk-words",
        type=int,
        default=defaults.chunk_words,
        metavar="N",
        help="words per chunk, at most (default: %(default)s)",
    )
    build.add_argument(
        "--chunk-overlap",
        type=int,
        default=defaults.chunk_overlap,
        metavar="N",
        help="words a chunk repeats from the previous one, at most (default: %(default)s)",
    )
    build.add_argument(
        "--nlist",
        type=int,
        default=defaults.nlist,
        metavar="N",
        help="IVF lists (--kind ivf; needs 39 chunks per list to train) (default: %(default)s)",
    )
    build.add_argument(
        "--embedding-model",
        default=EmbedderConfig().model,
        metavar="MODEL",
        help=f"sentence-transformers model: {DEFAULT_EMBEDDER} (packaged, the default), a local folder or a hub id",
    )
    build.add_argument(
        "--overwrite", action="store_true", help="replace an index (or --store collection) already there"
    )
    add_store_args(build, "--out")

    add = actions.add_parser(
        "add",
        help="add the documents of a JSONL file to an existing index",
        description="Add the documents in FILE.jsonl to the index in DIR (ids must be new).",
    )
    add.add_argument("--index", required=True, type=Path, metavar="DIR", help="the index folder")
    add.add_argument("--docs", required=True, type=Path, metavar="FILE.jsonl", help="documents, one JSON object a line")
    add.add_argument(
        "--chunk-words",
        type=int,
        default=None,
        metavar="N",
        help=f"--store: words per chunk, at most (default: {defaults.chunk_words}; an index keeps its own)",
    )
    add.add_argument(
        "--chunk-overlap",
        type=int,
        default=None,
        metavar="N",
        help=f"--store: words a chunk repeats from the previous one (default: {defaults.chunk_overlap})",
    )
    add_store_args(add, "--index", embedding_model=True)


class DocumentFileError(ValueError):
    """A JSONL line that is not a document; the message names the file and line."""


def read_documents(path: Path) -> tuple[list[Any], list[int]]:
    """The JSON objects in the JSONL file at `path` and their line numbers (from 1)."""
    lines = read_utf8(path, DocumentFileError).split("\n")  # as readlines(): only newlines end a line
    documents, numbers = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except ValueError as error:
            raise DocumentFileError(f"{path} line {number}: bad JSON ({error})") from None
        if not isinstance(document, dict):
            raise DocumentFileError(
                f"{path} line {number}: expected a JSON object with id and text, got {type(document).__name__}"
            )
        documents.append(document)
        numbers.append(number)
    if not documents:
        raise DocumentFileError(f"{path} holds no documents")
    return documents, numbers


def _add_documents(index: Any, path: Path, documents: list[Any], numbers: list[int]) -> int:
    """index.add with document validation errors reported by line; returns the chunks added."""
    from specdraft.retrieval.index import InvalidDocumentError

    try:
        return index.add(documents, progress=True)
    except InvalidDocumentError as error:
        raise _by_line(error, path, numbers) from None


def _by_line(error: Any, path: Path, numbers: list[int]) -> DocumentFileError:
    """An ``InvalidDocumentError`` reported by the file's line (``numbers``: each document's line)."""
    doc_id = f" (id {error.doc_id!r})" if error.doc_id is not None else ""
    return DocumentFileError(f"{path} line {numbers[error.position]}{doc_id}: {error.problem}")


def _add_and_save(index: Any, path: Path, documents: list[Any], numbers: list[int], out: Path, err: TextIO) -> int:
    """Add the documents (errors reported by line), save the index to ``out`` and print its notes;
    returns the chunks added."""
    chunks = _add_documents(index, path, documents, numbers)
    index.save(out)
    for note in index.notes:
        print(f"note: {note}", file=err)
    return chunks


def _build(args: argparse.Namespace, err: TextIO) -> int:
    from specdraft.retrieval.embedder import Embedder, EmbedderConfig
    from specdraft.retrieval.index import DocumentIndex, IndexConfig

    started = time.perf_counter()
    out: Path = args.out
    store = store_config(args, out)
    if store is not None:
        return _build_store(args, store, started, err)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not (out / "manifest.json").is_file():
            raise ValueError(f"{out} exists and is not an empty folder or a document index: not writing there")
        if not args.overwrite:
            raise ValueError(
                f"{out} already holds an index: use `specdraft index add --index {out}`, or --overwrite to replace it"
            )
    config = IndexConfig(
        kind=args.kind, chunk_words=args.chunk_words, chunk_overlap=args.chunk_overlap, nlist=args.nlist
    )
    embedder = Embedder(EmbedderConfig(model=args.embedding_model))
    documents, numbers = read_documents(args.docs)
    index = DocumentIndex.create(config, embedder)
    chunks = _add_and_save(index, args.docs, documents, numbers, out, err)
    print(
        f"indexed {index.documents} documents as {chunks} chunks ({index.kind}, {embedder.name}) in "
        f"{time.perf_counter() - started:.1f} s -> {out}",
        file=err,
    )
    return 0


def _build_store(args: argparse.Namespace, config: Any, started: float, err: TextIO) -> int:
    """``index build --store``: the documents into a new collection of the store (module docstring)."""
    from specdraft.retrieval.embedder import Embedder, EmbedderConfig
    from specdraft.retrieval.index import IndexConfig, InvalidDocumentError
    from specdraft.retrieval.stores import build_store

    chunking = IndexConfig(chunk_words=args.chunk_words, chunk_overlap=args.chunk_overlap)
    embedder = Embedder(EmbedderConfig(model=args.embedding_model))
    documents, numbers = read_documents(args.docs)
    try:
        store = build_store(config, documents, embedder, chunking, overwrite=args.overwrite, progress=True)
    except InvalidDocumentError as error:
        raise _by_line(error, args.docs, numbers) from None
    store.close()
    print(
        f"wrote {len(documents)} documents as {len(store)} chunks ({embedder.name}) into the {config.describe()} in "
        f"{time.perf_counter() - started:.1f} s",
        file=err,
    )
    return 0


def _add(args: argparse.Namespace, err: TextIO) -> int:
    from specdraft.retrieval.index import DocumentIndex

    started = time.perf_counter()
    store = store_config(args, args.index)
    if store is not None:
        return _add_to_store(args, store, started, err)
    flags = (("--chunk-words", args.chunk_words), ("--chunk-overlap", args.chunk_overlap))
    given = [flag for flag, value in flags if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} need --store: an index chunks as it was built to")
    documents, numbers = read_documents(args.docs)
    index = DocumentIndex.load(args.index)
    chunks = _add_and_save(index, args.docs, documents, numbers, args.index, err)
    print(
        f"added {len(documents)} documents as {chunks} chunks in {time.perf_counter() - started:.1f} s; "
        f"{args.index} now holds {index.documents} documents, {len(index)} chunks",
        file=err,
    )
    return 0


def _add_to_store(args: argparse.Namespace, config: Any, started: float, err: TextIO) -> int:
    """``index add --store``: the documents into the existing collection (module docstring)."""
    from specdraft.retrieval.embedder import Embedder, EmbedderConfig
    from specdraft.retrieval.index import IndexConfig, InvalidDocumentError
    from specdraft.retrieval.stores import add_to_store

    defaults = IndexConfig()
    chunking = IndexConfig(
        chunk_words=args.chunk_words if args.chunk_words is not None else defaults.chunk_words,
        chunk_overlap=args.chunk_overlap if args.chunk_overlap is not None else defaults.chunk_overlap,
    )
    embedder = Embedder(EmbedderConfig(model=args.embedding_model or EmbedderConfig().model))
    documents, numbers = read_documents(args.docs)
    try:
        chunks = add_to_store(config, documents, embedder, chunking, progress=True)
    except InvalidDocumentError as error:
        raise _by_line(error, args.docs, numbers) from None
    print(
        f"added {len(documents)} documents as {chunks} chunks to the {config.describe()} in "
        f"{time.perf_counter() - started:.1f} s",
        file=err,
    )
    return 0


def run_index(args: argparse.Namespace) -> int:
    """Run `specdraft index build|add`; bad input (exit 2) is reported on standard error."""
    from specdraft.retrieval.index import IndexNotFoundError

    try:
        return {"build": _build, "add": _add}[args.index_command](args, sys.stderr)
    except IndexNotFoundError as error:
        print(f"specdraft: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
