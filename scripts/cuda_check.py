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
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from specdraft.apps.bench.pass_cost import IdsOnlyTokenizer  # prompts are token ids: no EOS, a plain decode


def small_llama(vocab: int, dtype: torch.dtype, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=4, max_position_embeddings=2048, bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )
    model = LlamaForCausalLM(config).to(device="cuda", dtype=dtype).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    return model


def lossless(new_tokens: int) -> dict:
    from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator, TransformersModel
    from specdraft.drafters import PromptLookupDrafter
    from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

    tokenizer = IdsOnlyTokenizer(257)
    rng = torch.Generator().manual_seed(1)
    report = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = TransformersModel(small_llama(257, dtype), tokenizer, name=f"llama-small-{dtype}")
        fixed = SpeculativeGenerator(model, SpeculationConfig(initial_draft_len=8, adaptive=False, fallback=False))
        config = GenerationConfig(max_new_tokens=new_tokens)
        rows = []
        for trial in range(4):
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
                    out = model.hf_model.generate(torch.tensor([prompt], device="cuda"), max_new_tokens=new_tokens, do_sample=False)
                row["plain == transformers generate"] = out[0, len(prompt) :].tolist() == plain
            rows.append(row)
        report[str(dtype).replace("torch.", "")] = rows
    return report


def big_model(arch_config: Path | None, dtype: torch.dtype):
    from transformers import AutoConfig, AutoModelForCausalLM

    if arch_config is not None:
        config = AutoConfig.from_pretrained(arch_config.parent if arch_config.name == "config.json" else arch_config)
    else:
        from transformers import Qwen2Config

        config = Qwen2Config(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                             num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768, tie_word_embeddings=True)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    return model, config


def pass_costs(hf_model, vocab: int, context: int, widths: list[int], reps: int) -> dict:
    """Median ms of one cached forward pass over w new tokens after a ``context``-token prefill."""
    from transformers import DynamicCache

    ids = torch.randint(0, vocab, (1, context), device="cuda")
    out = {}
    with torch.inference_mode():
        cache = DynamicCache()
        hf_model(ids, past_key_values=cache, use_cache=True)
        for width in widths:
            new = torch.randint(0, vocab, (1, width), device="cuda")
            times = []
            for _ in range(reps + 3):
                torch.cuda.synchronize()
                start = time.perf_counter()
                hf_model(new, past_key_values=cache, use_cache=True)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
                cache.crop(context)
            out[width] = round(1e3 * statistics.median(times[3:]), 3)
    return out


def ideal_speedup(hf_model, vocab: int, context: int, new_tokens: int) -> dict:
    from specdraft import GenerationConfig, SpeculativeGenerator, TransformersModel
    from specdraft.copydraft.editor import COPY_SPECULATION
    from specdraft.retrieval.pipeline import RAG_SPECULATION
    from specdraft.retrieval.reference_drafter import ReferenceDraftConfig, ReferenceDrafter

    model = TransformersModel(hf_model, IdsOnlyTokenizer(vocab), name="arch-random")
    prompt = torch.randint(0, vocab, (context,), generator=torch.Generator().manual_seed(2)).tolist()
    config = GenerationConfig(max_new_tokens=new_tokens)
    runs = {}
    plain = None
    for name, speculation, with_drafter in (("plain", None, False), ("rag-default", RAG_SPECULATION, True), ("copydraft-default", COPY_SPECULATION, True)):
        generator = SpeculativeGenerator(model, speculation) if speculation else SpeculativeGenerator(model)
        walls = []
        for _ in range(3):
            drafter = ReferenceDrafter([plain], ReferenceDraftConfig(min_ngram=1)) if with_drafter else None
            torch.cuda.synchronize()
            result = generator.generate(prompt, drafter, config)
            torch.cuda.synchronize()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch-config", type=Path, default=None, help="a config.json (default: Qwen2.5-1.5B's shape)")
    parser.add_argument("--context", type=int, default=600, help="prompt tokens before the measured passes")
    parser.add_argument("--new-tokens", type=int, default=128)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    import transformers

    report["transformers"] = transformers.__version__
    report["lossless"] = lossless(48)
    widths = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    report["pass_ms_by_width"] = {}
    for dtype in (torch.bfloat16, torch.float32):  # float32 last: it stays loaded for the ideal run
        hf_model, config = big_model(args.arch_config, dtype)
        name = str(dtype).replace("torch.", "")
        report["pass_ms_by_width"][name] = {"context": args.context, "layers": config.num_hidden_layers, "hidden": config.hidden_size,
                                            "ms": pass_costs(hf_model, config.vocab_size, args.context, widths, 20)}
    report["ideal_acceptance_float32"] = ideal_speedup(hf_model, config.vocab_size, args.context, args.new_tokens)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cuda_check.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
