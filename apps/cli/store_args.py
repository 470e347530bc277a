"""The command line's vector store flags: ``--store`` and what says where a collection lives.

``specdraft index build --store NAME --out PATH`` and ``specdraft ask --store NAME --index PATH``
read or write a collection of a vector store (``specdraft.retrieval.stores``) instead of a
specdraft index folder: PATH is the store's folder (chroma, lancedb, qdrant: Qdrant's local mode)
or its Milvus Lite file (milvus); ``--collection``, ``--text-field`` and ``--vector-field`` map onto
``StoreConfig``. ``specdraft serve --store NAME=STORE:PATH[,collection=C][,text_field=F][,vector_field=V]``
(repeatable) names a store the RAG API's ``store`` field may choose (``parse_named_store``; the
collection defaults to NAME).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_store_args", "store_config", "parse_named_store"]

_FIELDS = ("collection", "text_field", "vector_field")


def add_store_args(parser: Any, where: str, embedding_model: bool = False) -> None:
    """``--store``, ``--collection``, ``--text-field``, ``--vector-field`` (and ``--embedding-model``
    when ``embedding_model``: a command whose index would otherwise name it)."""
    from specdraft.retrieval.embedder import DEFAULT_EMBEDDER
    from specdraft.retrieval.stores import STORES
    from specdraft.retrieval.stores.config import DEFAULT_COLLECTION

    parser.add_argument(
        "--store",
        choices=STORES,
        default=None,
        help=f"a vector store instead of a specdraft index: {where} is then its folder (chroma, lancedb, qdrant's "
        "local mode) or its Milvus Lite file (milvus); needs pip install 'specdraft[STORE]'",
    )
    parser.add_argument(
        "--collection",
        default=None,
        metavar="NAME",
        help=f"--store: the collection (LanceDB: table) (default: {DEFAULT_COLLECTION})",
    )
    parser.add_argument(
        "--text-field",
        default=None,
        metavar="FIELD",
        help="--store: the payload field holding a record's text (default: Chroma's documents, 'text' elsewhere)",
    )
    parser.add_argument(
        "--vector-field",
        default=None,
        metavar="FIELD",
        help="--store: the record's vector field (default: the store's usual one)",
    )
    if embedding_model:
        parser.add_argument(
            "--embedding-model",
            default=None,
            metavar="MODEL",
            help=f"--store: the sentence-transformers model that embedded the collection (default: {DEFAULT_EMBEDDER})",
        )


def store_config(args: argparse.Namespace, path: Any) -> Any:
    """The ``StoreConfig`` the flags name for a store at ``path``, or None without ``--store``
    (ValueError when a store flag is given without it)."""
    from specdraft.retrieval.stores import StoreConfig

    given = {name: getattr(args, name, None) for name in _FIELDS}
    if getattr(args, "store", None) is None:
        used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
        if getattr(args, "embedding_model", None) is not None and hasattr(args, "index"):
            used.append("--embedding-model")
        if used:
            raise ValueError(f"{', '.join(used)} need --store")
        return None
    return StoreConfig(
        args.store, path=str(path), **{name: value for name, value in given.items() if value is not None}
    )


def parse_named_store(text: str) -> tuple[str, Any]:
    """``NAME=STORE:PATH[,collection=C][,text_field=F][,vector_field=V]`` as (NAME, StoreConfig);
    ValueError saying what is wrong."""
    from specdraft.retrieval.stores import StoreConfig

    name, _, spec = text.partition("=")
    store, _, rest = spec.partition(":")
    path, *options = rest.split(",")
    if not name or not store or not path:
        raise ValueError(f"--store {text!r}: expected NAME=STORE:PATH[,collection=C][,text_field=F][,vector_field=V]")
    fields: dict[str, str] = {"collection": name}
    for option in options:
        key, _, value = option.partition("=")
        if key not in _FIELDS or not value:
            raise ValueError(f"--store {text!r}: unknown option {option!r} (options: {', '.join(_FIELDS)})")
        fields[key] = value
    try:
        return name, StoreConfig(store, path=path, **fields)
    except ValueError as error:
        raise ValueError(f"--store {text!r}: {error}") from None
