"""What batching several requests' verify passes could give at most: one pass over ``b`` sequences
vs ``b`` passes over one, on the real model, on this machine.

``python benchmarks/load_batch_probe.py --batches 1,2,4,8 --width 8 --context 160``

Contract: for each batch size ``b`` the probe prefills ``b`` equal-length contexts of ``context``
tokens once, then times ``repeats`` verify-shaped passes (round robin over the sizes, so that the
machine's drift falls on all of them alike) of ``width`` new tokens over all ``b`` at
once (one forward pass, a KV cache of batch ``b`` cropped back after each pass, so every pass sees
the same context). Equal lengths need no padding, so this is an upper bound on what a batcher of
real requests (different lengths: padding and masks, caches stacked and split) could gain.
Reported per ``b``: the median pass in ms, that pass's cost per request (``/ b``) and ``gain`` =
(``b`` x the batch-1 pass) / the batch-``b`` pass: above 1, batching ``b`` requests' verify passes
would take less time than running them one after another under the model lock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from specdraft.apps.bench.result_files import write_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class ProbeConfig:
    """``batches``: batch sizes; ``width``: new tokens per verify pass; ``context``: cached tokens."""

    model: str = "smollm2-135m"
    batches: tuple[int, ...] = (1, 2, 4, 8)
    width: int = 8
    context: int = 160
    repeats: int = 15

    def __post_init__(self) -> None:
        if not self.batches or any(not 1 <= b <= 64 for b in self.batches):
            raise ValueError(f"batches must be 1..64, got {self.batches}")
        if not 1 <= self.width <= 64 or not 1 <= self.context <= 4096 or not 1 <= self.repeats <= 1000:
            raise ValueError("width 1..64, context 1..4096 and repeats 1..1000")


def probe(config: ProbeConfig) -> dict[str, Any]:
    """The figures of the module docstring, one row per batch size (batch 1 always measured)."""
    import torch
    from transformers import AutoModelForCausalLM

    from specdraft.models import resolve_checkpoint

    model = AutoModelForCausalLM.from_pretrained(resolve_checkpoint(config.model), dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    sizes = sorted({1, *config.batches})
    caches, news = {}, {}
    with torch.inference_mode():
        for b in sizes:
            context = torch.randint(0, vocab, (b, config.context), generator=generator)
            news[b] = torch.randint(0, vocab, (b, config.width), generator=generator)
            caches[b] = model(context, use_cache=True).past_key_values
        times: dict[int, list[float]] = {b: [] for b in sizes}
        for turn in range(config.repeats + 1):  # round robin over the sizes: the machine's drift falls on all
            for b in sizes:
                start = time.perf_counter()
                model(news[b], past_key_values=caches[b], use_cache=True)
                if turn:  # the first round warms up
                    times[b].append(time.perf_counter() - start)
                caches[b].crop(-config.width)  # back to the context (this transformers takes the tokens to drop)
    rows = []
    for b in sizes:
        median = statistics.median(times[b])
        rows.append({"batch": b, "pass_ms": round(median * 1000, 2), "per_request_ms": round(median * 1000 / b, 2)})
        print(f"batch {b}: {median * 1000:.1f} ms per pass", file=sys.stderr, flush=True)
    one = rows[0]["pass_ms"]
    for row in rows:
        row["gain"] = round(row["batch"] * one / row["pass_ms"], 3)
    return {"config": asdict(config), "threads": torch.get_num_threads(), "rows": rows}


def markdown(report: dict[str, Any]) -> str:
    c = report["config"]
    lines = [
        f"Verify-pass batching probe: {c['model']}, {c['width']} new tokens over {c['context']} cached, "
        f"float32, {report['threads']} torch threads, median of {c['repeats']} passes.",
        "",
        "| batch | pass ms | ms per request | gain over one by one |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['batch']} | {r['pass_ms']:.1f} | {r['per_request_ms']:.1f} | {r['gain']:.2f}x |" for r in report["rows"]
    ]
    return "\n".join(lines) + "\n"


def draw(report: dict[str, Any], fig: Figure) -> None:
    """The pass time per request (bars) and the gain over one by one (line) per batch size."""
    rows = report["rows"]
    ax = fig.subplots()
    labels = [str(r["batch"]) for r in rows]
    ax.bar(labels, [r["per_request_ms"] for r in rows], color="#4C72B0")
    ax.set_xlabel("batch size")
    ax.set_ylabel("ms per request (one pass / batch)", color="#4C72B0")
    gain = ax.twinx()
    gain.plot(labels, [r["gain"] for r in rows], marker="o", color="#C44E52")
    gain.axhline(1.0, color="grey", linestyle="--")
    gain.set_ylabel("gain over one by one", color="#C44E52")
    c = report["config"]
    ax.set_title(f"Verify-pass batching: {c['model']}, {c['width']} new tokens over {c['context']} cached")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/load_batch_probe.py", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=ProbeConfig.model)
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--width", type=int, default=ProbeConfig.width)
    parser.add_argument("--context", type=int, default=ProbeConfig.context)
    parser.add_argument("--repeats", type=int, default=ProbeConfig.repeats)
    parser.add_argument(
        "--out", type=Path, default=None, help="write batch-probe.json, batch-probe.md and batch-probe.png here"
    )
    args = parser.parse_args(argv)
    try:
        config = ProbeConfig(
            args.model, tuple(int(b) for b in args.batches.split(",")), args.width, args.context, args.repeats
        )
    except ValueError as error:
        print(f"load_batch_probe: error: {error}", file=sys.stderr)
        return 2
    report = probe(config)
    print(markdown(report))
    if args.out:
        write_results(args.out, report, markdown(report), partial(draw, report), stem="batch-probe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
