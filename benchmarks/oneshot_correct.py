"""`specdraft correct` as a new user runs it: one fresh process per paragraph, speculation on and off.

    python benchmarks/oneshot_correct.py --out docs/bench/llama-correct-oneshot-0.5b
    python benchmarks/oneshot_correct.py --backend transformers --limit 3 --out DIR

Each paragraph of the grammar-paragraphs set (the same items `specdraft bench grammar-paragraphs`
uses) is written to a file and corrected by a new `specdraft correct --json` process, once with
speculation and once with `--no-speculation`, alternating which goes first. Nothing is warmed up:
this is the first request of a process, which the benchmark runner's warm-up hides. Reports per
paragraph and in total: the generation's wall time (`stats.wall_s`), the process's wall time, target
passes per token, accepted/drafted tokens, fall-back steps, and whether both outputs are identical.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specdraft.apps.bench.datasets.grammar_data import load_grammar_set
from specdraft.apps.bench.result_files import markdown_table, write_results


def run_cli(args: argparse.Namespace, path: Path, speculate: bool) -> dict:
    command = [
        sys.executable,
        "-m",
        "specdraft.apps.cli",
        "correct",
        "--backend",
        args.backend,
        "--model",
        args.model,
        "--json",
        "--file",
        str(path),
    ]
    if not speculate:
        command.append("--no-speculation")
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    payload = json.loads(done.stdout)
    payload["process_s"] = time.perf_counter() - start
    return payload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--backend", default="llama-cpp")
    parser.add_argument("--limit", type=int, default=5, help="paragraphs (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for i, item in enumerate(load_grammar_set("paragraphs", limit=args.limit)):
            path = Path(folder) / f"{i}.txt"
            path.write_text(item.source)
            order = [True, False] if i % 2 == 0 else [False, True]
            runs = {speculate: run_cli(args, path, speculate) for speculate in order}
            spec, plain = runs[True], runs[False]
            s = spec["stats"]
            rows.append(
                {
                    "id": item.id,
                    "tokens": len(spec["token_ids"]),
                    "identical": spec["token_ids"] == plain["token_ids"],
                    "spec_wall_s": s["wall_s"],
                    "plain_wall_s": plain["stats"]["wall_s"],
                    "spec_process_s": spec["process_s"],
                    "plain_process_s": plain["process_s"],
                    "speedup": plain["stats"]["wall_s"] / s["wall_s"],
                    "passes_per_token": s["forward_passes_per_token"],
                    "drafted": s["drafted_tokens"],
                    "accepted": s["accepted_tokens"],
                    "fallback_steps": s["fallback_steps"],
                    "exact": s["exact"],
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
    total = {
        "speedup": sum(r["plain_wall_s"] for r in rows) / sum(r["spec_wall_s"] for r in rows),
        "process_speedup": sum(r["plain_process_s"] for r in rows) / sum(r["spec_process_s"] for r in rows),
        "identical_rate": sum(r["identical"] for r in rows) / len(rows),
    }
    header = [
        "paragraph",
        "tokens",
        "plain s",
        "specdraft s",
        "speed-up",
        "passes/token",
        "accepted/drafted",
        "fall-back steps",
        "identical",
    ]
    table = markdown_table(
        header,
        [
            [
                r["id"],
                r["tokens"],
                r["plain_wall_s"],
                r["spec_wall_s"],
                f"{r['speedup']:.2f}x",
                r["passes_per_token"],
                f"{r['accepted']}/{r['drafted']}",
                r["fallback_steps"],
                r["identical"],
            ]
            for r in rows
        ],
    )
    markdown = (
        f"# `specdraft correct` one-shot on {args.model} ({args.backend})\n\nOne fresh process per paragraph and mode. "
        f"Generation time: **{total['speedup']:.2f}x** with speculation; whole process (load included): "
        f"{total['process_speedup']:.2f}x; identical: {total['identical_rate']:.0%}.\n\n{table}"
    )

    def draw(figure) -> None:
        axes = figure.add_subplot(1, 1, 1)
        x = range(len(rows))
        axes.bar([i - 0.2 for i in x], [r["plain_wall_s"] for r in rows], width=0.4, label="--no-speculation")
        axes.bar([i + 0.2 for i in x], [r["spec_wall_s"] for r in rows], width=0.4, label="specdraft (copydraft)")
        axes.set_xticks(list(x), [str(i) for i in x])
        axes.set_xlabel("paragraph")
        axes.set_ylabel("generation seconds")
        axes.set_title(f"specdraft correct, one process per paragraph ({args.model}, {args.backend})")
        axes.legend()

    write_results(
        args.out, {"model": args.model, "backend": args.backend, "total": total, "rows": rows}, markdown, draw
    )
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
