"""``call_with_timeout``: one retriever call with a time limit (``IterativeRAGConfig.retrieval_timeout_s``)."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from ..retriever import RetrieverError

__all__ = ["call_with_timeout"]

T = TypeVar("T")


def call_with_timeout(call: Callable[[], T], timeout: float | None, retriever: str) -> T:
    """``call()``'s result; with ``timeout``, a ``RetrieverError`` naming ``retriever`` when it takes
    longer (the call goes on in a daemon thread and its result is dropped). Its own exception is
    re-raised as it is."""
    if timeout is None:
        return call()
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # handed to the waiting thread
            outcome.append((False, error))

    worker = threading.Thread(target=run, name=f"retriever-{retriever}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise RetrieverError(retriever, f"did not answer within {timeout:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
