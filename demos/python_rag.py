"""The RAG pipeline in Python, without a server: build a small document index in a temporary folder,
ask a question, and print the answer, its sources and what drafting from the passages saved.

Run it (the model is loaded here; ``./start.sh`` has installed it already):

    .venv/bin/python demos/python_rag.py "How tall is the Eiffel Tower?"
    .venv/bin/python demos/python_rag.py --model qwen2.5-coder-0.5b "When was Python 3.12 released?"

(The server ``./start.sh`` starts answers the same questions over HTTP: ``POST /v1/rag/documents``
and ``POST /v1/rag/query``, see docs/rag.md.) The reference drafter drafts the answer from the
retrieved passages; the demo also answers plainly and checks that both answers are the same.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from specdraft import DEFAULT_MODEL, ModelConfig, load_model
from specdraft.retrieval import DocumentIndex, IndexConfig
from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline

DOCUMENTS = [
    {
        "id": "eiffel",
        "text": "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889 for the World's Fair.",
        "metadata": {"source": "travel-guide"},
    },
    {
        "id": "python",
        "text": "Python 3.12 was released in October 2023. It improved error messages and removed the distutils "
        "module.",
        "metadata": {"source": "release-notes"},
    },
    {
        "id": "library",
        "text": "The city library is open from 9 am to 6 pm on weekdays and from 10 am to 4 pm on Saturdays.",
        "metadata": {"source": "city-website"},
    },
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default="How tall is the Eiffel Tower?")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="target model (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        index = DocumentIndex.create(IndexConfig(kind="flat"))  # embeds with the packaged MiniLM
        index.add(DOCUMENTS)
        index.save(folder)
        index = DocumentIndex.load(folder)  # as an application would, later
        model = load_model(ModelConfig(args.model))
        config = RAGConfig(top_k=2, max_new_tokens=args.max_tokens)
        RAGPipeline(index, model, drafter="none", config=RAGConfig(top_k=2, max_new_tokens=1)).ask(
            args.question
        )  # warm-up, untimed
        answer = RAGPipeline(index, model, drafter="reference", config=config).ask(args.question)
        plain = RAGPipeline(index, model, drafter="none", config=config).ask(args.question)

    print(f"question: {args.question}")
    print(f"answer: {answer.answer}")
    print("sources: " + (", ".join(f"{hit.chunk.id} ({hit.chunk.metadata['source']})" for hit in answer.hits)))
    print(f"cited: {', '.join(answer.citations) or '-'}")
    s, p = answer.stats, plain.stats
    print(
        f"reference drafter: {s.generated_tokens} tokens in {s.target_forward_passes} model passes, {s.wall_s:.2f} s; "
        f"plain decoding: {p.target_forward_passes} passes, {p.wall_s:.2f} s; identical: "
        f"{answer.token_ids == plain.token_ids}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
