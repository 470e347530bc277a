"""Measure specdraft on a bare H100/H200 with trained weights, in two device calls; rehearse on a CPU.

The GPU machine has Python 3.12 with torch, transformers, tokenizers, numpy and matplotlib, but no
``gguf``, none of specdraft's other dependencies and no network, and one call carries at most
64 MiB (the working tree included). The trained model, smollm2-135m's GGUF file (98 MB), is too big
for one call, so it travels in two halves (``benchmarks/gpu/carry.py`` says how everything gets there):

1. Here, in the project's virtualenv::

       .venv/bin/python scripts/gpu_run.py prepare

   writes the ignored folder ``.gpu/``: ``part1``, ``part2`` (the GGUF file's halves),
   ``manifest.json`` (sizes and sha256s) and ``whl/`` (a wheel of ``gguf`` for CPython 3.12).
   It prints the two device calls below with the bytes each one carries.

2. Device call 1 (no trained weights yet; leaves ``.gpu/`` on the machine)::

       run(command="python3 scripts/gpu_run.py call1 --out $OUT",
           carry=[".gpu/manifest.json", ".gpu/whl", ".gpu/part1"], timeout_s=480)

   installs the wheel, checks part 1's sha256 and that everything call 2 imports imports, runs
   ``scripts/cuda_check.py``'s random-weight checks (lossless on CUDA, pass cost by width, ideal
   acceptance) and the fast path against eager on the same random shape. Writes ``call1.json`` and
   ``call1.md`` to ``$OUT`` and keeps ``call1.json`` in ``.gpu/`` for call 2.

3. Device call 2, right after call 1 (on the same warm machine, which still holds part 1)::

       run(command="python3 scripts/gpu_run.py call2 --out $OUT",
           carry=[".gpu/manifest.json", ".gpu/whl", ".gpu/part2"], timeout_s=480)

   joins the parts, checks the sha256, loads the model with transformers (float32) and measures
   (``benchmarks/gpu/measure.py``): (a) exactness of every drafter on both paths (the transformers
   backend and the fast path) against plain decoding and transformers' ``generate``; (b) the verify
   pass's cost by width, fast path against eager; (c) grammar-correction, RAG and chat speed-ups
   over plain decoding on the same path and over transformers' prompt lookup. Writes a docs/bench
   style folder to ``$OUT`` (``benchmarks/gpu/results.py``): ``results.json``, ``results.md``,
   ``grammar.png``, ``rag.png``, ``chat.png``, ``pass_cost.png``.

Each call starts no new section after ``--deadline-s`` seconds (420), writes what it has after every
section (a call cut short still returns results), and records a section that raises (its traceback
in the JSON, its last line in the Markdown, exit status 1) instead of giving up on the sections after
it; when the fast path fails its pass-cost sweep, the tasks run on the eager path only. If the
machine was given back between the calls, call 2 says part 1 is missing: run call 1 again, then
call 2.

Rehearsal on the CPU (what ``tests/scripts/test_gpu_run.py`` runs)::

    .venv/bin/python scripts/gpu_run.py --dry-run --out DIR

runs ``prepare`` into a temporary folder, then ``call1`` and ``call2`` there with ``--device cpu
--tiny`` (one prompt per task, a few tokens, a few widths), each as its own process, so the same
code splits, joins and hashes the GGUF file, installs the wheel with pip, imports specdraft from the
tree with the GPU image's missing modules refused, and writes the same folders (call 2's in DIR,
call 1's in DIR/call1).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ (one-off measurement code, not part of the package)

from benchmarks.gpu.carry import (  # noqa: E402  (torch-free and specdraft-free)
    CARRY_LIMIT_BYTES,
    PARTS,
    Layout,
    download_wheel,
    install_wheels,
    join_parts,
    relative,
    sha256_of,
    size_of,
    split_file,
    tree_files,
    use_tree,
    wheel_requirements,
)

T = TypeVar("T")
MODEL = "smollm2-135m"
DEADLINE_S = 420.0  # a device call may run under 8 minutes: start no new section after this
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


def say(message: str) -> None:
    print(f"[gpu_run {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# prepare (here)


def carry_lists(layout: Layout) -> dict[str, list[Path]]:
    """What each device call carries (``run``'s ``carry``), as paths."""
    return {f"call{n}": [layout.manifest, layout.wheels, layout.part(n)] for n in range(1, PARTS + 1)}


def prepare(gpu_dir: Path) -> dict:
    """Write ``gpu_dir`` (see the module doc) and return the manifest. Raises ValueError when a call
    would carry more than the 64 MiB a device call takes."""
    from specdraft.models import REGISTRY, gguf_path

    layout = Layout(gpu_dir)
    source = gguf_path(MODEL)  # verified against the registry's sha256
    entry = REGISTRY[MODEL]
    say(f"splitting {source} ({source.stat().st_size:,} bytes) into {PARTS} parts in {gpu_dir}")
    parts = split_file(source, [layout.part(n) for n in range(1, PARTS + 1)])
    shutil.rmtree(layout.wheels, ignore_errors=True)
    requirement = f"gguf=={importlib.metadata.version('gguf')}"
    say(f"downloading a CPython 3.12 wheel of {requirement}")
    wheel = download_wheel(requirement, layout.wheels)
    manifest = {
        "model": MODEL,
        "gguf_file": source.name,
        "size": entry.size_bytes,
        "sha256": entry.sha256,
        "parts": parts,
        "wheels": {wheel.name: {"sha256": sha256_of(wheel), "requires": wheel_requirements(wheel)}},
        "git_head": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "prepared": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if sum(part["size"] for part in parts) != entry.size_bytes:
        raise ValueError("the parts do not add up to the GGUF file's size")
    layout.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
    tree = size_of(tree_files(ROOT))
    for call, paths in carry_lists(layout).items():
        total = tree + size_of(paths)
        carry = json.dumps([relative(path, ROOT) for path in paths])
        say(
            f"{call}: {total / 2**20:.1f} MiB with the working tree ({tree / 2**20:.1f} MiB): "
            f'run(command="python3 scripts/gpu_run.py {call} --out $OUT", carry={carry}, timeout_s=480)'
        )
        if total > CARRY_LIMIT_BYTES:
            raise ValueError(
                f"{call} would carry {total / 2**20:.1f} MiB, more than the {CARRY_LIMIT_BYTES >> 20} MiB a device "
                "call takes"
            )
    say(f"requires of {wheel.name}: {manifest['wheels'][wheel.name]['requires']}")
    return manifest


# --------------------------------------------------------------------------------------------
# the device calls


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


class Sections:
    """A call's sections, run in order by ``run(name, step, *args)``: a section that would start after
    ``limit_s`` seconds is skipped (listed in ``skipped``), and one that raises is recorded in
    ``errors`` (its traceback) instead of ending the call, so that the sections after it still run
    and the report says what failed (``main`` then exits 1). Device time is short; one broken
    section must not cost the others' measurements."""

    def __init__(self, limit_s: float) -> None:
        self.start = time.perf_counter()
        self.limit_s = limit_s
        self.skipped: list[str] = []
        self.errors: dict[str, str] = {}

    def elapsed(self) -> float:
        return round(time.perf_counter() - self.start, 1)

    def run(self, name: str, step: Callable[..., T], *args: object) -> T | None:
        """``step(*args)``, or None when skipped or failed."""
        if self.elapsed() >= self.limit_s:
            self.skipped.append(name)
            say(f"skipping {name}: {self.elapsed():.0f} s in, past the deadline")
            return None
        say(f"{name} ({self.elapsed():.0f} s in)")
        try:
            return step(*args)
        except Exception:  # recorded in the report and the exit code (class doc)
            self.errors[name] = traceback.format_exc()
            say(f"{name} failed:\n{self.errors[name]}")
            return None

    def close(self, report: dict) -> None:
        report.update(skipped_for_time=self.skipped, errors=self.errors, elapsed_s=self.elapsed())


def call1(args: argparse.Namespace) -> dict:
    """Device call 1 (module doc); returns its report."""
    sections = Sections(args.deadline_s)
    layout = Layout(args.gpu_dir)
    manifest = json.loads(layout.manifest.read_text())
    imports = setup(layout)
    import cuda_check  # scripts/cuda_check.py, beside this script

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
        from transformers import LlamaConfig

        arch_config = layout.root / "tiny-arch" / "config.json"
        LlamaConfig(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
        ).save_pretrained(arch_config.parent)
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
    """Device call 2 (module doc); returns its report. When the fast path fails its pass-cost sweep,
    the tasks run on the eager path only (the error is in the report)."""
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


# --------------------------------------------------------------------------------------------
# the rehearsal


def dry_run(out: Path, gpu_dir: Path | None) -> dict:
    """``prepare``, ``call1`` and ``call2`` on the CPU with tiny budgets, each its own process (see
    the module doc); returns each step's seconds. Raises CalledProcessError when a step fails."""
    with tempfile.TemporaryDirectory(prefix="specdraft-gpu-") as tmp:
        folder = gpu_dir or Path(tmp)
        steps = {
            "prepare": ["prepare", "--gpu-dir", str(folder)],
            "call1": ["call1", "--gpu-dir", str(folder), "--out", str(out / "call1"), "--device", "cpu", "--tiny"],
            "call2": ["call2", "--gpu-dir", str(folder), "--out", str(out), "--device", "cpu", "--tiny"],
        }
        # one intra-op thread: on a small shared CPU, threads that spin-wait for each other made a
        # 135M model's 4-token pass take seconds instead of a tenth of one
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        seconds = {}
        for name, argv in steps.items():
            started = time.perf_counter()
            say(f"dry run: {name}")
            subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], check=True, env=env)
            seconds[name] = round(time.perf_counter() - started, 1)
    say(f"dry run done: {seconds}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "step", nargs="?", choices=("prepare", "call1", "call2"), help="the step to run (none with --dry-run)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="run prepare, call1 and call2 on the CPU with tiny budgets"
    )
    parser.add_argument("--out", type=Path, help="the result folder (call1, call2, --dry-run)")
    parser.add_argument(
        "--gpu-dir",
        type=Path,
        default=None,
        help="the carried folder (default: .gpu/ in the repository; --dry-run: a temporary one)",
    )
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny budgets (what --dry-run uses)")
    parser.add_argument(
        "--deadline-s",
        type=float,
        default=DEADLINE_S,
        help="start no new section after this many seconds (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.dry_run == (args.step is not None):
        parser.error("give a step (prepare, call1, call2) or --dry-run")
    if (args.dry_run or args.step in ("call1", "call2")) and args.out is None:
        parser.error("--out is required")
    if args.dry_run:
        dry_run(args.out.resolve(), args.gpu_dir)
        return 0
    args.gpu_dir = args.gpu_dir or ROOT / ".gpu"
    if args.step == "prepare":
        prepare(args.gpu_dir)
        return 0
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device (use --device cpu, or --dry-run to rehearse)")
    report = call1(args) if args.step == "call1" else call2(args)
    say(
        f"{args.step} done in {report['elapsed_s']} s; wrote {args.out}"
        + (f"; FAILED: {', '.join(report['errors'])}" if report["errors"] else "")
    )
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
