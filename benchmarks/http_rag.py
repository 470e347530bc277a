"""HTTP RAG benchmark: a LangChain-style RAG chain against a real ``specdraft serve``, per drafter.

What a user of an existing RAG pipeline sees: the chain retrieves its own passages and sends them
inside the chat messages, and the server drafts from them or not, chosen by the request's
``drafter`` field (``none``, ``prompt-lookup``, ``documents``).

- **Questions and passages**: the ``rag`` suite's (``rag_suites``): the ``rag-reading`` pool's
  first ``RAG_PASSAGE_CAP`` passages in the cached FAISS index, the questions of
  ``rag_questions(seed)`` whose passage is indexed, the first ``--limit`` of them; the top
  ``--top-k`` chunks retrieved per question.
- **Messages**: as LangChain's ``create_stuff_documents_chain`` builds them in its RAG tutorial:
  ``LANGCHAIN_SYSTEM`` with the passages joined by blank lines (LangChain's default document
  separator) as the system message, the question as the user message.
- **Server**: ``python -m specdraft.apps.cli serve`` in a subprocess on loopback (a free port), the
  model loaded at start-up; one untimed request per drafter first.
- **Interleaving**: every question is sent with each drafter in turn, the order rotated question by
  question, so load from other processes on the machine falls on every drafter alike.
- **Per request**: the client's wall time (HTTP, tokenization and drafter set-up included), the
  completion tokens (``usage``), the target passes and the prefill time (``speculation``), and
  whether the text equals the ``none`` answer's. Summaries and the Markdown table and plot:
  ``runner.summarize`` and ``report.write_report`` (``none`` is the baseline).

``python benchmarks/http_rag.py --out docs/bench/http-rag-0.5b`` (see ``--help``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from specdraft.apps.bench.datasets.archive_cache import say
from specdraft.apps.bench.runner import BenchResult, Measurement, environment, summarize

if TYPE_CHECKING:
    from specdraft.retrieval.embedder import TextEmbedder

DRAFTERS = ("none", "prompt-lookup", "documents")  # "none" first: the baseline
# LangChain's RAG tutorial prompt (create_stuff_documents_chain fills {context}).
LANGCHAIN_SYSTEM = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question. If you don't know the answer, say that you don't know. Use three sentences maximum and keep the "
    "answer concise.\n\n{context}"
)
DOCUMENT_SEPARATOR = "\n\n"  # LangChain's default
START_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_S = 1800.0


@dataclass
class HttpMeasurement(Measurement):
    """One request's measurement; the tokens are counted by the server (``usage``), not listed."""

    completion_tokens: int = 0
    text: str = ""
    speculation: dict = field(default_factory=dict)

    @property
    def generated_tokens(self) -> int:
        return self.completion_tokens


def langchain_messages(question: str, passages: Sequence[str]) -> list[dict]:
    """The messages a LangChain stuff-documents RAG chain sends for ``question`` over ``passages``."""
    context = DOCUMENT_SEPARATOR.join(passages)
    return [
        {"role": "system", "content": LANGCHAIN_SYSTEM.format(context=context)},
        {"role": "user", "content": question},
    ]


def rotated(items: Sequence[str], shift: int) -> list[str]:
    """``items`` rotated left by ``shift`` (the drafters' order for question number ``shift``)."""
    shift %= len(items)
    return list(items[shift:]) + list(items[:shift])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``specdraft serve`` in a subprocess on loopback; a context manager (stops it on exit)."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            sys.executable,
            "-m",
            "specdraft.apps.cli",
            "serve",
            *args,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self._log_path = log
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> "Server":
        self._log = open(self._log_path, "w")
        self._process = subprocess.Popen(
            self.command, stdout=self._log, stderr=subprocess.STDOUT, env=os.environ.copy()
        )
        try:
            self._wait_until_loaded()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_until_loaded(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"the server exited with {self._process.returncode}; see {self._log_path}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=5) as response:
                    if json.load(response).get("loaded"):
                        return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the server did not load its model within {START_TIMEOUT_S:.0f} s; see {self._log_path}"
                )
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.terminate()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()

    def chat(self, body: dict) -> tuple[dict, float]:
        """POST ``body`` to ``/v1/chat/completions``: the JSON answer and the client's wall seconds."""
        request = urllib.request.Request(
            self.url + "/v1/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
        )
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"HTTP {error.code}: {error.read().decode('utf-8', 'replace')}") from None
        return answer, time.perf_counter() - start


def measure(server: Server, case_id: str, messages: list[dict], drafter: str, max_tokens: int) -> HttpMeasurement:
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "drafter": drafter}
    answer, wall = server.chat(body)
    speculation = answer["speculation"]
    return HttpMeasurement(
        method=drafter,
        prompt_id=case_id,
        token_ids=[],
        wall_s=wall,
        forward_passes=speculation["target_forward_passes"],
        mean_accepted_tokens=speculation["mean_accepted_tokens"],
        first_token_s=speculation["prefill_s"],
        completion_tokens=answer["usage"]["completion_tokens"],
        text=answer["choices"][0]["message"]["content"],
        speculation=speculation,
    )


def rag_cases(
    limit: int, seed: int, top_k: int, embedder: TextEmbedder | None = None
) -> tuple[list[tuple[str, list[dict]]], dict]:
    """``(question id, messages)`` for the first ``limit`` ``rag`` questions, and the index's facts
    (``embedder``: the packaged MiniLM by default, as the ``rag`` suite's)."""
    from specdraft.apps.bench import datasets
    from specdraft.apps.bench.rag_suites import RAG_PASSAGE_CAP, cached_index
    from specdraft.retrieval.embedder import Embedder

    passages = datasets.rag_passages()[:RAG_PASSAGE_CAP]
    indexed = {passage["id"] for passage in passages}
    questions = [record for record in datasets.rag_questions(seed) if record["id"] in indexed][:limit]
    index, facts = cached_index(passages, embedder or Embedder())
    cases, found = [], 0
    for record in questions:
        hits = index.search(record["question"], top_k)
        found += any(hit.chunk.doc_id == record["id"] for hit in hits)
        cases.append((record["id"], langchain_messages(record["question"], [hit.chunk.text for hit in hits])))
    facts = {**facts, "top_k": top_k, "own_passage_retrieved": round(found / max(1, len(questions)), 4)}
    return cases, facts


def run(args: argparse.Namespace) -> BenchResult:
    cases, index_facts = rag_cases(args.limit, args.seed, args.top_k)
    if not cases:
        raise ValueError("no questions: --limit must be >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    serve_args = [
        "--model",
        args.model,
        "--backend",
        args.backend,
        "--device",
        args.device,
        "--dtype",
        args.dtype,
        "--drafter",
        "none",
    ]
    measurements: list[HttpMeasurement] = []
    log = Path(tempfile.gettempdir()) / f"specdraft-http-rag-{os.getpid()}.log"
    say(f"starting specdraft serve (log: {log}) ...")
    with Server(serve_args, log) as server:
        for drafter in DRAFTERS:  # warm-up, untimed
            measure(server, "warm-up", cases[0][1], drafter, 8)
        for number, (case_id, messages) in enumerate(cases):
            rows = {}
            for drafter in rotated(DRAFTERS, number):
                rows[drafter] = measure(server, case_id, messages, drafter, args.max_tokens)
                print(
                    f"[{number + 1}/{len(cases)}] {case_id} {drafter}: {rows[drafter].completion_tokens} tokens "
                    f"in {rows[drafter].wall_s:.1f} s, {rows[drafter].forward_passes} passes",
                    file=sys.stderr,
                    flush=True,
                )
            for drafter in DRAFTERS:
                rows[drafter].identical = rows[drafter].text == rows[DRAFTERS[0]].text
                measurements.append(rows[drafter])
    setup = {
        "endpoint": "POST /v1/chat/completions (temperature 0), one request at a time",
        "messages": "LangChain stuff-documents RAG prompt: system = instruction + passages joined by blank lines; "
        "user = question",
        "server": " ".join(["specdraft serve", *serve_args]),
        "order": "drafters interleaved per question, order rotated each question (other processes share the CPU)",
        "wall_time": "client side: HTTP, tokenization and drafter set-up included",
        "speculation": "the server's per drafter: prompt-lookup ServiceConfig.speculation, documents rag_speculation",
    }
    result = BenchResult(
        benchmark="http-rag",
        model=args.model,
        max_new_tokens=args.max_tokens,
        prompts=len(cases),
        environment=environment(),
        summaries=summarize(list(DRAFTERS), measurements),
        measurements=list(measurements),
        retrieval={"index": index_facts, "http": setup},
    )
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from specdraft.retrieval.pipeline import RAGConfig

    parser = argparse.ArgumentParser(prog="python benchmarks/http_rag.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="served model (default: %(default)s)")
    parser.add_argument("--backend", default="transformers")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--limit", type=int, default=20, help="questions (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="which questions (default: %(default)s)")
    parser.add_argument(
        "--top-k", type=int, default=RAGConfig().top_k, help="passages per question (default: %(default)s)"
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="max_tokens per request (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="folder for results.json, results.md and results.png")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from specdraft.apps.bench.report import write_report

    args = parse_args(argv)
    result = run(args)
    paths = write_report(result, args.out)
    for path in paths.values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
