"""Verify-pass cost by width: the eager transformers backend vs the fast path, in one command.

    python benchmarks/pass_cost.py --fast-path                      # Qwen2.5-1.5B's shape, random weights
    python benchmarks/pass_cost.py --fast-path --model qwen2.5-coder-0.5b
    python benchmarks/pass_cost.py --fast-path --arch tiny --device cpu --reps 3

After a ``--context``-token prefill, one session per path runs ``--reps`` passes of w new tokens for
each width w (each followed by a rollback to the context), after ``--warmup`` untimed ones (on the
fast path those capture the CUDA graph of the width's bucket). Prints a table of median milliseconds
(eager, fast, eager/fast), the largest logit difference between the two per width, and (with
``--check-tokens``) whether greedy decoding on the fast path, plain and with drafted chains and trees,
gives exactly the eager model's tokens; ``--json PATH`` writes the report there, its Markdown table and plot
beside it (``result_files.write_results``). ``--arch qwen2.5-1.5b`` (the default
without ``--model``) needs no weights and no network: a random-initialised model of that shape, as
``scripts/cuda_check.py`` uses. The fast path's goal on a GPU: the 1.5B shape's pass >= 3x cheaper.
A random model's logits are nearly flat, so there a near-tie may flip an argmax at float32 rounding
(differences ~1e-5): judge the token checks on a real model (``--model``) where they disagree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from specdraft.apps.bench.result_files import markdown_table, write_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_WIDTHS = (1, 2, 4, 8, 16, 32, 64)


class IdsOnlyTokenizer:
    """What a model over random weights needs of a tokenizer: a length, no EOS, a decode."""

    eos_token_id = None
    chat_template = None

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def __len__(self) -> int:
        return self.vocab

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return " ".join(map(str, ids))


def arch_config(arch: str):
    """The Hugging Face config of ``arch`` ("qwen2.5-1.5b" or "tiny"), for random weights (no download)."""
    from transformers import LlamaConfig, Qwen2Config

    if arch == "qwen2.5-1.5b":
        config = Qwen2Config(
            vocab_size=151936,
            hidden_size=1536,
            intermediate_size=8960,
            num_hidden_layers=28,
            num_attention_heads=12,
            num_key_value_heads=2,
            max_position_embeddings=32768,
            tie_word_embeddings=True,
        )
    elif arch == "tiny":
        config = LlamaConfig(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
        )
    else:
        raise ValueError(f"unknown --arch {arch!r}")
    return config


def random_model(arch: str, device: str, dtype: str):
    """A ``TransformersModel`` of ``arch``'s shape with random weights (no download)."""
    from transformers import AutoModelForCausalLM

    from specdraft import ModelConfig, TransformersModel
    from specdraft.backends.transformers.model import resolved_device, resolved_dtype

    config = arch_config(arch)
    config.bos_token_id = config.eos_token_id = config.pad_token_id = None
    model_config = ModelConfig(device=device, dtype=dtype)
    torch.manual_seed(0)
    with torch.device(resolved_device(model_config)):
        hf_model = AutoModelForCausalLM.from_config(config, dtype=resolved_dtype(model_config))
    hf_model.generation_config.eos_token_id = hf_model.generation_config.pad_token_id = None
    return TransformersModel(hf_model, IdsOnlyTokenizer(config.vocab_size), name=f"random-{arch}")


def session_pass_ms(model, context: int, widths, reps: int, warmup: int, rows: dict | None = None) -> dict[int, float]:
    """Median milliseconds of a pass over w new tokens after ``context`` tokens, per width (the same
    tokens for every model: the seed is fixed). ``rows``, when given, gets each width's last logits."""
    generator = torch.Generator().manual_seed(1)
    session = model.new_session()
    session.feed(torch.randint(0, model.vocab_size, (context,), generator=generator).tolist(), all_logits=False)
    out = {}
    for width in widths:
        tokens = torch.randint(0, model.vocab_size, (width,), generator=generator).tolist()
        times = []
        for i in range(warmup + reps):
            if model.device.type == "cuda":
                torch.cuda.synchronize(model.device)
            start = time.perf_counter()
            logits = session.feed(tokens)
            logits[-1, 0].item()  # the pass is done and its logits are readable, on any device
            times.append(time.perf_counter() - start)
            session.truncate(context)
        out[width] = round(1e3 * statistics.median(times[warmup:]), 3)
        if rows is not None:
            rows[width] = logits.detach().float().cpu()
    if hasattr(session, "close"):
        session.close()
    return out


def measure(args: argparse.Namespace) -> dict:
    if args.model:
        from specdraft import ModelConfig, load_model

        model = load_model(ModelConfig(args.model, args.device, args.dtype, backend="transformers"))
    else:
        model = random_model(args.arch, args.device, args.dtype)
    widths = [int(w) for w in args.widths.split(",")]
    report = {
        "model": model.name,
        "device": str(model.device),
        "dtype": str(model.hf_model.dtype).replace("torch.", ""),
        "device_name": torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "context": args.context,
        "reps": args.reps,
    }
    eager_rows: dict = {}
    fast_rows: dict = {}
    report["eager_ms"] = session_pass_ms(model, args.context, widths, args.reps, args.warmup, eager_rows)
    if args.fast_path:
        from specdraft.backends.fast_path import FastPathModel

        fast = FastPathModel(model)
        report["fast_graphs"] = fast.uses_graphs
        report["fast_ms"] = session_pass_ms(fast, args.context, widths, args.reps, args.warmup, fast_rows)
        report["speedup"] = {w: round(report["eager_ms"][w] / report["fast_ms"][w], 2) for w in widths}
        report["max_abs_logit_diff"] = {w: float((eager_rows[w] - fast_rows[w]).abs().max()) for w in widths}
        report["same_argmax"] = all(torch.equal(eager_rows[w].argmax(-1), fast_rows[w].argmax(-1)) for w in widths)
        if args.check_tokens:
            report["lossless"] = lossless(model, fast, args.context, args.check_tokens)
    return report


def lossless(eager, fast, context: int, new_tokens: int) -> dict:
    """Plain greedy decoding on the eager model vs on the fast path, plainly and with a reference
    drafter that holds the plain output (chains and trees of every width up to its drafts): the
    tokens must be identical (float32)."""
    from specdraft import GenerationConfig, SpeculativeGenerator
    from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

    prompt = torch.randint(0, eager.vocab_size, (context,), generator=torch.Generator().manual_seed(2)).tolist()
    config = GenerationConfig(max_new_tokens=new_tokens, ignore_eos=True)
    plain = SpeculativeGenerator(eager).generate(prompt, None, config).token_ids
    variant = [(t + 1) % eager.vocab_size if i % 5 == 4 else t for i, t in enumerate(plain)]
    drafted = SpeculativeGenerator(fast).generate(
        prompt, ReferenceDrafter([variant, plain], ReferenceDraftConfig(min_ngram=1)), config
    )
    return {
        "tokens": new_tokens,
        "fast plain == eager plain": SpeculativeGenerator(fast).generate(prompt, None, config).token_ids == plain,
        "fast drafted (trees) == eager plain": drafted.token_ids == plain,
        "fast drafted accepted tokens": drafted.stats.accepted_tokens,
    }


def table(report: dict) -> str:
    fast = "fast_ms" in report
    mode = f"fast path ({'CUDA graphs' if report.get('fast_graphs') else 'eager: no CUDA'})" if fast else "eager only"
    lines = [
        f"{report['model']} on {report['device_name']} ({report['dtype']}), context {report['context']}, median of "
        f"{report['reps']}; {mode}",
        "width  eager_ms" + ("   fast_ms  eager/fast" if fast else ""),
    ]
    for width, eager in report["eager_ms"].items():
        row = f"{width:>5}  {eager:>8.3f}"
        if fast:
            row += f"  {report['fast_ms'][width]:>8.3f}  {report['speedup'][width]:>9.2f}x"
            row += f"   max |logit diff| {report['max_abs_logit_diff'][width]:.2e}"
        lines.append(row)
    if fast:
        lines.append(f"same argmax on every row: {report['same_argmax']}")
    if "lossless" in report:
        lines.append("lossless: " + json.dumps(report["lossless"]))
    return "\n".join(lines)


def markdown(report: dict) -> str:
    """The report as Markdown: its settings, then one table row per width."""
    fast = "fast_ms" in report
    header = ["width", "eager ms", *(["fast ms", "eager / fast", "max abs logit diff"] if fast else [])]
    rows = [
        [
            width,
            eager,
            *(
                [
                    report["fast_ms"][width],
                    f"{report['speedup'][width]:.2f}x",
                    f"{report['max_abs_logit_diff'][width]:.2e}",
                ]
                if fast
                else []
            ),
        ]
        for width, eager in report["eager_ms"].items()
    ]
    notes = [f"same argmax on every row: {report['same_argmax']}"] if fast else []
    notes += ["lossless: `" + json.dumps(report["lossless"]) + "`"] if "lossless" in report else []
    return "\n\n".join([table(report).splitlines()[0], markdown_table(header, rows).rstrip("\n"), *notes]) + "\n"


def draw(report: dict, fig: Figure) -> None:
    """Median milliseconds of a pass against its width, eager and (when measured) fast path."""
    ax = fig.subplots()
    widths = list(report["eager_ms"])
    ax.plot(widths, list(report["eager_ms"].values()), marker="o", label="eager")
    if "fast_ms" in report:
        ax.plot(widths, [report["fast_ms"][w] for w in widths], marker="o", label="fast path")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("new tokens per pass (width)")
    ax.set_ylabel(f"median ms per pass after {report['context']} tokens")
    ax.set_title(f"{report['model']} on {report['device_name']} ({report['dtype']})")
    ax.legend()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--fast-path",
        action="store_true",
        help="measure the fast path too (static cache, bucketed passes, CUDA graphs on a GPU)",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="a model to load (registry name, checkpoint folder); default: --arch with random weights",
    )
    parser.add_argument(
        "--arch",
        default="qwen2.5-1.5b",
        choices=("qwen2.5-1.5b", "tiny"),
        help="random-weight shape when no --model (default: %(default)s)",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] (default: %(default)s)")
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=("auto", "float32", "bfloat16", "float16"),
        help="weights dtype (default: auto = float32)",
    )
    parser.add_argument(
        "--context", type=int, default=600, help="tokens before the measured passes (default: %(default)s)"
    )
    parser.add_argument(
        "--widths",
        default=",".join(map(str, DEFAULT_WIDTHS)),
        help="comma-separated pass widths (default: %(default)s)",
    )
    parser.add_argument("--reps", type=int, default=20, help="timed passes per width (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed passes per width first (default: %(default)s)")
    parser.add_argument(
        "--check-tokens",
        type=int,
        default=64,
        help="with --fast-path: also decode this many tokens eager vs fast, plain and drafted, and compare (0: skip; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="also write the report here as JSON, with its Markdown table and plot beside it (same name, .md and .png)",
    )
    args = parser.parse_args(argv)
    if args.reps < 1 or args.warmup < 0 or args.context < 1:
        parser.error("--reps and --context must be >= 1, --warmup >= 0")
    report = measure(args)
    print(table(report))
    if args.json:  # PATH, and beside it PATH.md and PATH.png
        write_results(args.json.parent, report, markdown(report), partial(draw, report), stem=args.json.stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
