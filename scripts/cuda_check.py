"""Check the verify core on a CUDA GPU and measure what speculation can gain there.

    python scripts/cuda_check.py --out DIR [--arch-config config.json]

Needs no model weights (random-initialised models) and no network, so it runs on a bare GPU machine
with torch and transformers. Writes ``DIR/cuda_check.json`` and prints a summary.

1. **Lossless on CUDA**: a small random Llama in float32 and in bfloat16; speculative decoding with
   prompt lookup and with reference drafts (chains and trees) must give exactly the tokens of plain
   decoding with the same engine, and, in float32, of transformers' ``generate``.
2. **Verify-pass cost by width**: a model of ``--arch-config``'s architecture (for example
   qwen2.5-coder-1.5b's config.json), random weights in float32 and in bfloat16, after a
   ``--context``-token prefill; median milliseconds of a pass over w new tokens, w = 1 ... 256. On a
   CPU the cost grows about linearly with w; on a GPU it stays nearly flat, which is what makes long
   drafts pay.
3. **Ideal-acceptance speed-up** (float32): the same model decoding ``--new-tokens`` tokens plainly,
   then with a reference drafter that holds the plain output (every draft is accepted; the upper
   bound of copy/quote drafting) under the RAG and copydraft speculation defaults.

``run_checks`` runs the three on any device with smaller budgets too: ``scripts/gpu_run.py`` calls it
in its first GPU call and rehearses it on a CPU (``--dry-run``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks/ (not installed)

from benchmarks.pass_cost import IdsOnlyTokenizer  # noqa: E402  (prompts are token ids: no EOS, a plain decode)

WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _sync(device: torch.device | str) -> None:
    """Wait for the device's queued work (a no-op off CUDA), so that a timer reads finished work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def small_llama(vocab: int, dtype: torch.dtype, seed: int = 0, device: str = "cuda"):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    model = LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    return model


def lossless(new_tokens: int, device: str = "cuda", trials: int = 4) -> dict:
    """Section 1 of the module doc: per dtype, per trial, whether each drafter's output is identical
    to plain decoding's (and, in float32, plain's to transformers' ``generate``)."""
    from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator, TransformersModel
    from specdraft.drafters import PromptLookupDrafter
    from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

    tokenizer = IdsOnlyTokenizer(257)
    rng = torch.Generator().manual_seed(1)
    report = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = TransformersModel(small_llama(257, dtype, device=device), tokenizer, name=f"llama-small-{dtype}")
        fixed = SpeculativeGenerator(model, SpeculationConfig(initial_draft_len=8, adaptive=False, fallback=False))
        config = GenerationConfig(max_new_tokens=new_tokens)
        rows = []
        for trial in range(trials):
            prompt = torch.randint(0, 256, (48,), generator=rng).tolist() * 2  # repeated: prompt lookup finds matches
            plain = fixed.generate(prompt, None, config).token_ids
            variant = [(t + 1) % 256 if i % 5 == 4 else t for i, t in enumerate(plain)]
            drafters = {
                "prompt-lookup": PromptLookupDrafter(),
                "reference-chain": ReferenceDrafter([plain], ReferenceDraftConfig(max_branches=1, min_ngram=1)),
                "reference-tree": ReferenceDrafter([variant, plain], ReferenceDraftConfig(max_branches=4, min_ngram=1)),
            }
            row = {"trial": trial}
            for name, drafter in drafters.items():
                result = fixed.generate(prompt, drafter, config)
                row[name] = {"identical": result.token_ids == plain, "accepted": result.stats.accepted_tokens}
            if dtype == torch.float32:
                with torch.inference_mode():
                    out = model.hf_model.generate(
                        torch.tensor([prompt], device=device), max_new_tokens=new_tokens, do_sample=False
                    )
                row["plain == transformers generate"] = out[0, len(prompt) :].tolist() == plain
            rows.append(row)
        report[str(dtype).replace("torch.", "")] = rows
    return report


def big_model(arch_config: Path | None, dtype: torch.dtype, device: str = "cuda"):
    from transformers import AutoConfig, AutoModelForCausalLM

    if arch_config is not None:
        config = AutoConfig.from_pretrained(arch_config.parent if arch_config.name == "config.json" else arch_config)
    else:
        from transformers import Qwen2Config

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
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    return model, config


def pass_costs(hf_model, vocab: int, context: int, widths: list[int], reps: int) -> dict:
    """Median ms of one cached forward pass over w new tokens after a ``context``-token prefill."""
    from transformers import DynamicCache

    device = hf_model.device
    ids = torch.randint(0, vocab, (1, context), device=device)
    out = {}
    with torch.inference_mode():
        cache = DynamicCache()
        hf_model(ids, past_key_values=cache, use_cache=True)
        for width in widths:
            new = torch.randint(0, vocab, (1, width), device=device)
            times = []
            for _ in range(reps + 3):
                _sync(device)
                start = time.perf_counter()
                hf_model(new, past_key_values=cache, use_cache=True)
                _sync(device)
                times.append(time.perf_counter() - start)
                cache.crop(
                    -width
                )  # drop the pass's tokens: back to the context (a count, as transformers 5.x takes it)
            out[width] = round(1e3 * statistics.median(times[3:]), 3)
    return out


def ideal_speedup(hf_model, vocab: int, context: int, new_tokens: int) -> dict:
    """Section 3 of the module doc: plain vs the RAG and copydraft defaults with a drafter holding
    plain's output; median wall time of 3 runs each, speed-ups, passes, identity."""
    from specdraft import GenerationConfig, SpeculativeGenerator, TransformersModel
    from specdraft.copydraft.editor import COPY_SPECULATION
    from specdraft.retrieval.pipeline import RAG_SPECULATION
    from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

    model = TransformersModel(hf_model, IdsOnlyTokenizer(vocab), name="arch-random")
    prompt = torch.randint(0, vocab, (context,), generator=torch.Generator().manual_seed(2)).tolist()
    config = GenerationConfig(max_new_tokens=new_tokens)
    runs = {}
    plain = None
    for name, speculation, with_drafter in (
        ("plain", None, False),
        ("rag-default", RAG_SPECULATION, True),
        ("copydraft-default", COPY_SPECULATION, True),
    ):
        generator = SpeculativeGenerator(model, speculation) if speculation else SpeculativeGenerator(model)
        walls = []
        for _ in range(3):
            drafter = ReferenceDrafter([plain], ReferenceDraftConfig(min_ngram=1)) if with_drafter else None
            _sync(hf_model.device)
            result = generator.generate(prompt, drafter, config)
            _sync(hf_model.device)
            walls.append(result.stats.wall_s)
        plain = plain if plain is not None else result.token_ids
        runs[name] = {
            "wall_s": round(statistics.median(walls), 4),
            "decode_s": round(statistics.median(walls) - result.stats.prefill_s, 4),
            "passes": result.stats.target_forward_passes,
            "identical": result.token_ids == plain,
        }
    for name, run in runs.items():
        run["speedup"] = round(runs["plain"]["wall_s"] / run["wall_s"], 2)
        run["decode_speedup"] = round(runs["plain"]["decode_s"] / run["decode_s"], 2)
    return runs


def run_checks(
    arch_config: Path | None,
    context: int,
    new_tokens: int,
    device: str = "cuda",
    widths: tuple[int, ...] = WIDTHS,
    reps: int = 20,
    lossless_tokens: int = 48,
    trials: int = 4,
) -> dict:
    """Sections 1-3 of the module doc on ``device``; the report ``main`` writes. The defaults are the
    GPU run's; smaller ones rehearse it on a CPU (``scripts/gpu_run.py --dry-run``)."""
    import transformers

    on_cuda = torch.device(device).type == "cuda"
    report = {"device": torch.cuda.get_device_name() if on_cuda else "cpu", "torch": torch.__version__}
    report["transformers"] = transformers.__version__
    report["lossless"] = lossless(lossless_tokens, device, trials)
    report["pass_ms_by_width"] = {}
    for dtype in (torch.bfloat16, torch.float32):  # float32 last: it stays loaded for the ideal run
        hf_model, config = big_model(arch_config, dtype, device)
        name = str(dtype).replace("torch.", "")
        report["pass_ms_by_width"][name] = {
            "context": context,
            "layers": config.num_hidden_layers,
            "hidden": config.hidden_size,
            "ms": pass_costs(hf_model, config.vocab_size, context, list(widths), reps),
        }
    report["ideal_acceptance_float32"] = ideal_speedup(hf_model, config.vocab_size, context, new_tokens)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch-config", type=Path, default=None, help="a config.json (default: Qwen2.5-1.5B's shape)")
    parser.add_argument("--context", type=int, default=600, help="prompt tokens before the measured passes")
    parser.add_argument("--new-tokens", type=int, default=128)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    report = run_checks(args.arch_config, args.context, args.new_tokens)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuda_check.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
