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
import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ (one-off measurement code, not part of the package)

from benchmarks.gpu.calls import call1, call2  # noqa: E402  (torch and specdraft imported inside the calls)
from benchmarks.gpu.carry import (  # noqa: E402  (torch-free and specdraft-free)
    CARRY_LIMIT_BYTES,
    PARTS,
    Layout,
    download_wheel,
    relative,
    sha256_of,
    size_of,
    split_file,
    tree_files,
    wheel_requirements,
)
from benchmarks.gpu.sections import say  # noqa: E402

MODEL = "smollm2-135m"
DEADLINE_S = 420.0  # a device call may run under 8 minutes: start no new section after this


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
