"""Grammar quality per model: ERRANT F0.5 of the corrector's answers, and how often they drop words.

``python benchmarks/grammar_quality.py --models smollm2-135m qwen2.5-coder-0.5b
--sentences 40 --paragraphs 10 --out docs/bench/grammar-quality`` corrects the first items of the
grammar sets (``grammar_data.load_grammar_set``, seed ``--seed``) with ``GrammarCorrector`` exactly
as the service and ``specdraft correct`` do (speculatively: the answer is the model's plain greedy
answer), and reports, per model and set:

- ``errant``: corpus-level ERRANT precision, recall and F0.5 against the references
  (``errant_score.score``);
- ``drops_words``: the share of answers that leave out at least one word of the input, and
  ``mean_dropped_share``: the mean share of the input's words left out (``answer_check``'s word
  alignment); the same two for the references themselves (``reference_drops_words``: some injected
  errors are extra words, which a correction removes);
- ``flagged``: the share of answers ``answer_check`` flags (``ok`` false), ``flags``: how many
  answers each kind of warning hit, and ``reference_flagged``: the share of references it flags
  (false alarms on right answers);
- the wall time and generated tokens.

It writes ``results.json`` (the settings, the environment, the summaries and every answer with its
check), ``results.md`` (the table) and ``results.png`` (F0.5, drops and flags per model and set), through
``result_files.write_results``. Models load on CPU by default; ``--threads`` sets torch's
thread count (1 is fastest on a CPU that other processes share). The committed results were made
with ``MKL_CBWR=AVX2 OMP_NUM_THREADS=1`` in the environment (``MKL_CBWR`` as ``specdraft`` sets it),
in about 10 minutes on a shared 2-core CPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from specdraft.apps.bench.datasets.grammar_data import GrammarItem, load_grammar_set
from specdraft.apps.bench.result_files import write_results
from specdraft.copydraft import CorrectorConfig, GrammarCorrector
from specdraft.copydraft.answer_check import check_answer

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SETS = ("sentences", "paragraphs")
# warning prefix -> the short name a summary counts it under
FLAG_KINDS = {
    "leaves out": "drops",
    "repeats": "loops",
    "was cut off": "token_limit",
    "adds": "adds_text",
}


def correct_items(corrector: GrammarCorrector, items: list[GrammarItem], progress: bool = True) -> list[dict]:
    """One row per item: the answer, its check and its cost."""
    rows = []
    for n, item in enumerate(items, start=1):
        start = time.perf_counter()
        result = corrector.correct(item.source)
        wall = time.perf_counter() - start
        rows.append(
            {
                "id": item.id,
                "kind": item.kind,
                "errors": list(item.errors),
                "source": item.source,
                "reference": item.reference,
                "corrected": result.corrected,
                "quality": result.quality.to_dict(),
                "generated_tokens": len(result.token_ids),
                "wall_s": round(wall, 3),
            }
        )
        if progress:
            flag = "ok" if result.quality.ok else "FLAGGED"
            print(
                f"  [{n}/{len(items)}] {item.id}: {len(result.token_ids)} tokens, {wall:.1f} s, {flag}",
                file=sys.stderr,
                flush=True,
            )
    return rows


def summarize(rows: list[dict]) -> dict:
    """The summary of one model on one set (see the module docstring)."""
    from specdraft.apps.bench.errant_score import score

    n = len(rows)
    references = [check_answer(r["source"], r["reference"]) for r in rows]
    flags = {name: 0 for name in FLAG_KINDS.values()}
    for row in rows:
        hit = {
            name
            for prefix, name in FLAG_KINDS.items()
            for w in row["quality"]["warnings"]
            if w.startswith(f"the answer {prefix}")
        }
        for name in hit:
            flags[name] += 1
    errant = score([r["source"] for r in rows], [r["corrected"] for r in rows], [r["reference"] for r in rows])
    return {
        "items": n,
        "errant": {key: round(value, 4) if isinstance(value, float) else value for key, value in errant.items()},
        "drops_words": _share(r["quality"]["dropped_word_count"] > 0 for r in rows),
        "mean_dropped_share": round(sum(r["quality"]["dropped_words"] for r in rows) / n, 4),
        "flagged": _share(not r["quality"]["ok"] for r in rows),
        "flags": flags,
        "reference_drops_words": _share(c.dropped_words > 0 for c in references),
        "reference_mean_dropped_share": round(sum(c.dropped_share for c in references) / n, 4),
        "reference_flagged": _share(not c.ok for c in references),
        "generated_tokens": sum(r["generated_tokens"] for r in rows),
        "wall_s": round(sum(r["wall_s"] for r in rows), 1),
    }


def _share(flags) -> float:
    flags = list(flags)
    return round(sum(map(bool, flags)) / len(flags), 4) if flags else 0.0


def run(models: list[str], sentences: int, paragraphs: int, seed: int = 0, device: str = "cpu") -> dict:
    """Correct the sets with every model; ``{"settings", "environment", "results": {model: {set: {"summary",
    "rows"}}}}``."""
    from specdraft import ModelConfig
    from specdraft.apps.bench.runner import environment
    from specdraft.apps.model_pool import ModelPool

    sets = {
        "sentences": load_grammar_set("sentences", sentences, seed),
        "paragraphs": load_grammar_set("paragraphs", paragraphs, seed),
    }
    pool = ModelPool(ModelConfig(device=device))
    results: dict = {}
    for name in models:
        corrector = GrammarCorrector(pool.get(name), CorrectorConfig())
        results[name] = {}
        for kind, items in sets.items():
            if not items:
                continue
            print(f"{name}: {len(items)} {kind}", file=sys.stderr, flush=True)
            rows = correct_items(corrector, items)
            results[name][kind] = {"summary": summarize(rows), "rows": rows}
    settings = {"models": models, "sentences": sentences, "paragraphs": paragraphs, "seed": seed, "device": device}
    return {"settings": settings, "environment": environment(), "results": results}


def markdown(report: dict) -> str:
    """The Markdown table of a ``run`` report."""
    s, env = report["settings"], report["environment"]
    lines = [
        "# Grammar correction quality per model",
        "",
        f"The first {s['sentences']} items of grammar-sentences and {s['paragraphs']} of grammar-paragraphs "
        f"(seed {s['seed']}), corrected by `GrammarCorrector` as the service does (greedy; on {s['device']}, "
        f"torch {env['torch']}, torch threads: {env['threads']}; {env['time']}). ERRANT F0.5 against the references. "
        '"drops words": answers that leave out at least one word of the input (the references themselves '
        'drop a word where the injected error is an extra word); "flagged": answers the answer check '
        "(`copydraft.answer_check`) does not present as corrections, and why (one answer may have several reasons).",
        "",
        "| model | set | items | ERRANT P / R / F0.5 | drops words | mean share of words dropped | flagged | flagged "
        "for: drops / loops / token limit / adds text | references: drop words / flagged | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model, by_set in report["results"].items():
        for kind, result in by_set.items():
            m = result["summary"]
            e, f = m["errant"], m["flags"]
            lines.append(
                f"| {model} | {kind} | {m['items']} | {e['precision']:.2f} / {e['recall']:.2f} / **{e['f0.5']:.3f}** "
                f"| {m['drops_words']:.0%} | {m['mean_dropped_share']:.1%} | {m['flagged']:.0%} "
                f"| {f['drops']} / {f['loops']} / {f['token_limit']} / {f['adds_text']} "
                f"| {m['reference_drops_words']:.0%} / {m['reference_flagged']:.0%} | {m['wall_s']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def draw(report: dict, fig: Figure) -> None:
    """Per model and set: ERRANT F0.5, the share of answers that drop words and the share flagged."""
    bars = [
        (f"{model}\n{kind}", result["summary"])
        for model, by_set in report["results"].items()
        for kind, result in by_set.items()
    ]
    fig.set_size_inches(max(6.0, 2.2 * len(bars) + 2), 4.5)
    ax = fig.subplots()
    measures = (
        ("F0.5", lambda m: m["errant"]["f0.5"], "#4C72B0"),
        ("drops words", lambda m: m["drops_words"], "#C44E52"),
        ("flagged", lambda m: m["flagged"], "#DD8452"),
    )
    width = 0.8 / len(measures)
    for n, (label, value, color) in enumerate(measures):
        ax.bar(
            [i + (n - 1) * width for i in range(len(bars))],
            [value(m) for _, m in bars],
            width,
            label=label,
            color=color,
        )
    ax.set_xticks(range(len(bars)), [name for name, _ in bars], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score / share of answers")
    ax.legend()
    ax.set_title("Grammar correction quality per model")


def write(report: dict, out: Path) -> dict[str, Path]:
    """``results.json``, ``results.md`` and ``results.png`` in ``out`` (``result_files.write_results``)."""
    return write_results(out, report, markdown(report), partial(draw, report))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/grammar_quality.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=["smollm2-135m", "qwen2.5-coder-0.5b"],
        help="registry names, folders or hub ids (default: %(default)s)",
    )
    parser.add_argument("--sentences", type=int, default=40, help="grammar-sentences items (default: %(default)s)")
    parser.add_argument("--paragraphs", type=int, default=10, help="grammar-paragraphs items (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="which items and errors (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/bench/grammar-quality"), help="output folder (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    report = run(args.models, args.sentences, args.paragraphs, args.seed, args.device)
    paths = write(report, args.out)
    print(markdown(report))
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
