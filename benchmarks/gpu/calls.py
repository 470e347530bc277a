"""The GPU run's two device calls (``scripts/gpu_run.py call1`` and ``call2``; the script's module doc
says what each one does): ``setup`` installs the carried wheels and imports specdraft from the tree,
``call1`` runs the random-weight checks, ``call2`` measures the trained model; each returns its report
and writes its result folder (``results``). Torch and specdraft are imported inside the calls, after
``setup``, never at module level."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import os
import platform
import sys
import time
from pathlib import Path

from .carry import Layout, install_wheels, join_parts, sha256_of, use_tree
from .sections import Sections, say

ROOT = Path(__file__).resolve().parents[2]

# what call 2 imports; call 1 imports them all first, so that a missing module shows before call 2
CALL2_MODULES = (
    "specdraft.backends.fast_path",
    "specdraft.apps.bench.runner",
    "specdraft.apps.bench.report",
    "benchmarks.pass_cost",
    "specdraft.apps.bench.rag_suites",
    "specdraft.apps.bench.datasets.grammar_errors",
    "specdraft.copydraft.editor",
    "specdraft.retrieval.pipeline",
    "specdraft.retrieval.prompt_passages",
    "specdraft.drafters",
    "benchmarks.gpu.measure",
)


def setup(layout: Layout) -> dict:
    """Install the carried wheels into ``layout.site`` and import specdraft from the tree (carry's
    ``use_tree``); returns facts about where things came from. Raises RuntimeError when transformers
    does not take the carried gguf. HF_HUB_OFFLINE: the GPU machine has no network, so nothing may
    wait for one."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    how = install_wheels(sorted(layout.wheels.glob("*.whl")), layout.site)
    finder = use_tree(ROOT, layout.site)
    import gguf
    import transformers
    from transformers.utils import is_gguf_available

    import specdraft

    facts = {
        "wheels_installed_by": how,
        "gguf": importlib.metadata.version("gguf"),
        "gguf_from": str(Path(gguf.__file__).parent),
        "specdraft_from": str(Path(specdraft.__file__).parent),
        "specdraft_by_tree_finder": "specdraft" in finder.served,
        "transformers_sees_gguf": is_gguf_available(),
    }
    if not facts["transformers_sees_gguf"]:
        raise RuntimeError(f"transformers {transformers.__version__} does not accept gguf {facts['gguf']}")
    return facts


def run_facts(args: argparse.Namespace) -> dict:
    import torch
    import transformers

    on_cuda = args.device.startswith("cuda")
    return {
        "command": "python3 scripts/gpu_run.py " + " ".join(sys.argv[1:]),
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if on_cuda else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "dry_run": args.tiny,
    }


def call1(args: argparse.Namespace) -> dict:
    """Device call 1 (``scripts/gpu_run.py``'s module doc); returns its report."""
    sections = Sections(args.deadline_s)
    layout = Layout(args.gpu_dir)
    manifest = json.loads(layout.manifest.read_text())
    imports = setup(layout)
    import cuda_check  # scripts/cuda_check.py, beside scripts/gpu_run.py (whose folder is on sys.path)

    for name in CALL2_MODULES:
        importlib.import_module(name)
    from benchmarks.gpu import measure, results
    from benchmarks.pass_cost import random_model
    from specdraft.backends.fast_path import FastPathModel

    report: dict = {
        "run": run_facts(args),
        "imports": {**imports, "call2_modules": list(CALL2_MODULES)},
        "part1_sha256_ok": sha256_of(layout.part(1)) == manifest["parts"][0]["sha256"],
    }
    if not report["part1_sha256_ok"]:
        raise ValueError(f"{layout.part(1)} does not match the manifest's sha256")
    budget = measure.TINY if args.tiny else measure.FULL
    if args.tiny:  # cuda_check's default shape is Qwen2.5-1.5B's: far too big for a CPU rehearsal
        from benchmarks.pass_cost import arch_config as tiny_config

        arch_config = layout.root / "tiny-arch" / "config.json"
        tiny_config("tiny").save_pretrained(arch_config.parent)
        checks = (
            arch_config,
            budget.context,
            budget.new_tokens,
            args.device,
            budget.widths,
            budget.reps,
            budget.new_tokens,
            1,
        )
    else:
        checks = (None, 600, 128, args.device)  # cuda_check's own defaults
    report["cuda_check"] = sections.run("cuda_check", cuda_check.run_checks, *checks)
    results.write_call1(args.out, report)

    def fast_path_random() -> dict:
        eager = random_model("tiny" if args.tiny else "qwen2.5-1.5b", args.device, "float32")
        sweep = measure.pass_cost(
            eager, FastPathModel(eager), budget if args.tiny else dataclasses.replace(budget, context=600)
        )
        return {"model": eager.name, **sweep}

    report["fast_path_random"] = sections.run("fast path vs eager, random weights", fast_path_random)
    sections.close(report)
    results.write_call1(args.out, report)
    results.write_json(layout.call1_report, report)
    return report


def call2(args: argparse.Namespace) -> dict:
    """Device call 2 (``scripts/gpu_run.py``'s module doc); returns its report. When the fast path
    fails its pass-cost sweep, the tasks run on the eager path only (the error is in the report)."""
    sections = Sections(args.deadline_s)
    layout = Layout(args.gpu_dir)
    manifest = json.loads(layout.manifest.read_text())
    imports = setup(layout)
    from benchmarks.gpu import measure, results
    from specdraft.backends.fast_path import FastPathModel
    from specdraft.models import REGISTRY

    budget = measure.TINY if args.tiny else measure.FULL
    started = time.perf_counter()
    gguf = join_parts(layout)
    join_s = time.perf_counter() - started
    say(f"joined and checked {gguf} in {join_s:.1f} s; loading it with transformers (float32, {args.device})")
    started = time.perf_counter()
    eager, loaded_from = measure.load_gguf(gguf, args.device, manifest["model"], manifest["sha256"])
    load_s = time.perf_counter() - started
    report: dict = {
        "run": run_facts(args),
        "imports": imports,
        "budget": dataclasses.asdict(budget),
        "model": {
            "name": manifest["model"],
            "gguf_file": manifest["gguf_file"],
            "sha256": manifest["sha256"],
            "registry_sha256_match": REGISTRY[manifest["model"]].sha256 == manifest["sha256"],
            "join_s": round(join_s, 2),
            "load_s": round(load_s, 1),
            "loaded_from": loaded_from,
            "parameters": sum(p.numel() for p in eager.hf_model.parameters()),
            "dtype": str(eager.hf_model.dtype),
        },
        "tasks": {},
        "exactness": {"lossless": False},
        "call1": json.loads(layout.call1_report.read_text()) if layout.call1_report.is_file() else None,
    }
    results.write_json(args.out / "results.json", report)
    fast: FastPathModel | None = FastPathModel(eager)
    report["pass_cost"] = sections.run("pass cost by width", measure.pass_cost, eager, fast, budget)
    if report["pass_cost"] is None:
        fast = None
    else:
        report["fast_trees"] = sections.run("fast path trees", measure.fast_trees, eager, fast, budget)
    results.write_json(args.out / "results.json", report)
    builders = {"grammar": measure.grammar_task, "rag": measure.rag_task, "chat": measure.chat_task}
    bench: dict = {}
    for name in (*builders, "draft-model"):
        if name in builders:
            task = sections.run(f"{name}: cases", builders[name], eager, budget)
        else:
            task = sections.run(
                f"{name}: cases", measure.draft_model_task, eager, measure.chat_task(eager, budget), budget
            )
        ran = sections.run(name, measure.run_task, task, eager, fast, budget.task_warm_up) if task is not None else None
        if ran is not None:
            bench[name], found = ran
            report["tasks"][name] = {**found, "result": bench[name].to_dict()}
            results.write_json(args.out / "results.json", report)
    trees = report.get("fast_trees") or {}
    report["exactness"] = {
        "lossless": bool(report["tasks"])
        and all(found["exactness"]["lossless"] for found in report["tasks"].values())
        and all(trees.get(key, False) for key in ("fast plain == eager plain", "fast drafted (trees) == eager plain")),
        "by_task": {name: found["exactness"]["lossless"] for name, found in report["tasks"].items()},
    }
    sections.close(report)
    results.write_call2(args.out, report, bench)
    return report
