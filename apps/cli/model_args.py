"""Command-line arguments that several `specdraft` commands share."""

from __future__ import annotations

import argparse


def add_model_args(parser: argparse.ArgumentParser, default_model: str) -> None:
    """--model (default ``default_model``), --backend, --device, --dtype, --context, --fast-path (an
    alias of --backend fast-path), --no-prefix-cache and, for ``--backend engine``, --engine-url and
    --engine-api. ``model_config`` maps them onto a ``ModelConfig``, ``model_pool`` onto a pool."""
    from specdraft.backends.engine.config import ENGINE_APIS, EngineConfig
    from specdraft.model_config import BACKENDS, DTYPES, ModelConfig

    defaults = ModelConfig()
    parser.add_argument(
        "--model",
        default=default_model,
        help="target model: registry name, checkpoint folder, .gguf file or hub id (default: %(default)s)",
    )
    parser.add_argument(
        "--backend",
        default=defaults.backend,
        choices=BACKENDS,
        help="transformers (exact float32 reference, CPU or CUDA) or llama-cpp (the GGUF file as it is: fast on a "
        "CPU); auto = llama-cpp for a .gguf path, else transformers; fast-path = transformers with static KV caches "
        "and CUDA graphs (--fast-path); engine = verify on a serving engine at --engine-url (greedy only; --model is "
        "loaded here for its tokenizer) (default: %(default)s)",
    )
    parser.add_argument(
        "--device",
        default=defaults.device,
        help="transformers: auto (CUDA if available), cpu or cuda[:N] (default: %(default)s)",
    )
    parser.add_argument(
        "--dtype",
        default=defaults.dtype,
        choices=DTYPES,
        help="transformers weights dtype; auto = float32, which keeps the output identical to plain decoding on GPUs "
        "too (bfloat16/float16 may flip near-ties)",
    )
    parser.add_argument(
        "--engine-url",
        default=None,
        metavar="URL",
        help="--backend engine: the serving engine's address, for example http://gpu-box:8000",
    )
    parser.add_argument(
        "--engine-api",
        default=EngineConfig.api,
        choices=ENGINE_APIS,
        help="--backend engine: the engine's request dialect (default: %(default)s)",
    )
    parser.add_argument(
        "--context",
        type=int,
        default=defaults.context,
        metavar="TOKENS",
        help="llama-cpp: context size in tokens (default: 0 = min(the model's, 4096))",
    )
    parser.add_argument(
        "--fast-path",
        dest="backend",
        action="store_const",
        const="fast-path",
        help="an alias of --backend fast-path: transformers with static KV caches and verify passes bucketed by "
        "width, captured as CUDA graphs on a GPU (eager on a CPU); same output (see docs/backends.md, GPU fast path)",
    )
    parser.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="do not keep the KV cache of recent prompts (by default a request starts from the longest prefix an "
        "earlier one computed: a chat's next turn, a fixed instruction; the output is the same either way)",
    )


def model_config(args: argparse.Namespace):
    """The ``ModelConfig`` that the model arguments of ``add_model_args`` describe. SystemExit for
    ``--backend engine`` without ``--engine-url``."""
    from specdraft.backends.engine.config import EngineConfig
    from specdraft.model_config import ModelConfig

    engine = None
    if args.backend == "engine" or args.engine_url:
        if not args.engine_url:
            raise SystemExit("--backend engine needs --engine-url URL")
        engine = EngineConfig(args.engine_url, args.engine_api)
    return ModelConfig(args.model, args.device, args.dtype, args.backend, args.context, engine)


def model_pool(args: argparse.Namespace):
    """The ``ModelPool`` that the model arguments of ``add_model_args`` describe (the backend is
    chosen by ``specdraft.backends.load_model`` when the pool loads a model)."""
    from specdraft.apps.model_pool import ModelPool
    from specdraft.prefix_cache import PrefixCacheConfig

    prefix_cache = PrefixCacheConfig(enabled=False) if args.no_prefix_cache else None
    return ModelPool(model_config(args), prefix_cache=prefix_cache)
