"""scripts/gpu_run.py: the GPU run's plumbing (fast) and its CPU rehearsal end to end (slow).

The rehearsal (``--dry-run``) runs ``prepare``, ``call1`` and ``call2`` as the GPU machine would,
on the CPU with tiny budgets: it splits, joins and hashes the real smollm2-135m GGUF file, downloads
the ``gguf`` wheel (needs PyPI) and installs it with pip, imports specdraft from the tree with the
GPU image's missing modules refused, loads the trained weights with transformers and writes the
result folders. Its numbers mean nothing; the folder's shape and the exactness checks do.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    """A module outside the package (torch- and specdraft-free at import), loaded by path."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


carry = _load("gpu_run_carry", ROOT / "benchmarks" / "gpu" / "carry.py")
gpu_sections = _load("gpu_run_sections", ROOT / "benchmarks" / "gpu" / "sections.py")
_path = list(sys.path)
gpu_run = _load("gpu_run_script", ROOT / "scripts" / "gpu_run.py")  # puts the repository root on sys.path ...
sys.path[:] = _path  # ... which no other test should see


def _layout_with_parts(tmp_path: Path, data: bytes):
    source = tmp_path / "model.gguf"
    source.write_bytes(data)
    layout = carry.Layout(tmp_path / "gpu")
    parts = carry.split_file(source, [layout.part(n) for n in range(1, carry.PARTS + 1)])
    manifest = {"gguf_file": "model.gguf", "size": len(data), "sha256": carry.sha256_of(source), "parts": parts}
    layout.manifest.write_text(json.dumps(manifest))
    return layout


def test_split_then_join_gives_the_file_back(tmp_path):
    data = bytes(range(256)) * 4099  # an odd length: the last part is shorter
    layout = _layout_with_parts(tmp_path, data)
    sizes = [layout.part(n).stat().st_size for n in range(1, carry.PARTS + 1)]
    assert sum(sizes) == len(data) and max(sizes) - min(sizes) < carry.PARTS
    assert carry.join_parts(layout).read_bytes() == data


def test_join_names_a_missing_part(tmp_path):
    layout = _layout_with_parts(tmp_path, b"x" * 1000)
    layout.part(1).unlink()
    with pytest.raises(FileNotFoundError, match="part1"):
        carry.join_parts(layout)


def test_join_refuses_a_corrupted_part_and_keeps_no_file(tmp_path):
    layout = _layout_with_parts(tmp_path, b"x" * 1000)
    layout.part(2).write_bytes(b"y" * layout.part(2).stat().st_size)
    with pytest.raises(ValueError, match="sha256"):
        carry.join_parts(layout)
    assert not list(layout.model_dir.iterdir())


def test_finder_refuses_what_the_gpu_image_lacks(tmp_path):
    finder = carry.TreeFinder({}, tmp_path)
    for name in ("flask", "gguf"):  # gguf: only from the carried wheels, and none is installed here
        spec = finder.find_spec(name)
        with pytest.raises(ModuleNotFoundError, match=name):
            importlib.util.module_from_spec(spec)
    assert finder.find_spec("json") is None  # everything else: the usual finders


def test_finder_maps_package_dir_onto_the_tree(tmp_path):
    (tmp_path / "gguf").mkdir()
    (tmp_path / "gguf" / "__init__.py").write_text("")
    finder = carry.TreeFinder(carry.tree_packages(ROOT), tmp_path)
    assert Path(finder.find_spec("specdraft").origin) == ROOT / "core" / "__init__.py"
    assert finder.find_spec("specdraft.copydraft").submodule_search_locations == [str(ROOT / "copydraft")]
    assert Path(finder.find_spec("gguf").origin) == tmp_path / "gguf" / "__init__.py"
    assert finder.served == {"specdraft", "specdraft.copydraft", "gguf"}


def test_a_failing_section_is_recorded_and_the_next_one_runs():
    sections = gpu_sections.Sections(limit_s=60)
    assert sections.run("broken", lambda: 1 / 0) is None
    assert sections.run("fine", lambda x: x + 1, 1) == 2
    report: dict = {}
    sections.close(report)
    assert list(report["errors"]) == ["broken"] and "ZeroDivisionError" in report["errors"]["broken"]
    assert report["skipped_for_time"] == []


def test_no_section_starts_after_the_deadline():
    sections = gpu_sections.Sections(limit_s=0)
    assert sections.run("late", lambda: "ran") is None
    assert sections.skipped == ["late"] and sections.errors == {}


@pytest.mark.slow
def test_dry_run_writes_the_result_folders_and_everything_is_lossless(tmp_path):
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_run.py"), "--dry-run", "--out", str(out)], check=True, timeout=900
    )
    check_result_folders(out)


def check_result_folders(out: Path) -> None:
    """What a dry run must leave in ``out`` (call 2's folder) and ``out/call1``."""
    report = json.loads((out / "results.json").read_text())
    assert {
        "run",
        "imports",
        "budget",
        "model",
        "pass_cost",
        "fast_trees",
        "tasks",
        "exactness",
        "call1",
    } <= report.keys()
    assert report["run"]["dry_run"] and report["skipped_for_time"] == [] and report["errors"] == {}
    assert report["model"]["registry_sha256_match"] and report["model"]["name"] == "smollm2-135m"
    assert report["model"]["loaded_from"] in ("gguf", "cached checkpoint")  # the latter where setup converted it
    imports = report["imports"]
    assert imports["specdraft_by_tree_finder"] and imports["specdraft_from"] == str(ROOT / "core")
    assert (
        imports["wheels_installed_by"] == "already" and Path(imports["gguf_from"]).parent.name == "site"
    )  # left by call 1
    assert set(report["pass_cost"]["eager_ms"]) == set(report["pass_cost"]["fast_ms"]) == {"1", "4", "16"}

    assert set(report["tasks"]) == {"grammar", "rag", "chat", "draft-model"}
    for name, task in report["tasks"].items():
        methods = task["exactness"]["methods"]
        assert {"eager:plain", "fast:plain", "transformers:plain"} <= methods.keys()
        assert len(methods) >= 5, name  # at least one drafter on each path
        for method, row in methods.items():
            if not method.startswith("transformers:"):
                assert row["same_path"] == 1 and row["generate"] == 1, (name, method, row)
        assert task["exactness"]["lossless"]
        assert [row["method"] for row in task["speedups"]] == list(methods)
    assert (
        report["fast_trees"]["fast plain == eager plain"]
        and report["fast_trees"]["fast drafted (trees) == eager plain"]
    )
    assert report["exactness"]["lossless"] is True

    markdown = (out / "results.md").read_text()
    for heading in (
        "## (a) Exactness",
        "## (b) Verify-pass cost by width",
        "## (c) Speed-ups",
        "### grammar",
        "### rag",
        "### chat",
        "## Call 1",
    ):
        assert heading in markdown
    for png in ("grammar.png", "rag.png", "chat.png", "pass_cost.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    assert len([p for p in out.iterdir() if p.is_file()]) <= 8  # what one device call sends back

    call1 = json.loads((out / "call1" / "call1.json").read_text())
    assert call1["part1_sha256_ok"] and call1["skipped_for_time"] == [] and call1["errors"] == {}
    assert call1["imports"]["wheels_installed_by"] == "pip"
    assert {"lossless", "pass_ms_by_width", "ideal_acceptance_float32"} <= call1["cuda_check"].keys()
    assert all(
        row[key]["identical"]
        for row in call1["cuda_check"]["lossless"]["float32"]
        for key in ("prompt-lookup", "reference-chain", "reference-tree")
    )
    assert set(call1["fast_path_random"]["fast_ms"]) == {"1", "4", "16"}
    assert report["call1"] == call1
