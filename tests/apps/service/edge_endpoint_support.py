"""The laptop endpoint (``specdraft edge serve``'s app: the service serving an edge model,
``specdraft.apps.service.edge_model``) on a live loopback server, talking to a real
verify-server process (``tests/edge/edge_server_main.py``: the tiny chat model with ``--edge``).

The local draft model shares the server model's tokenizer (and chat template); by default it has
other weights (``draft_model``), so verifications reject drafts and the answers are the server's."""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import socket
import sys
from typing import Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(TESTS, "edge"), HERE]

from edge_support import KEY  # noqa: E402
from live_server import LiveServer  # noqa: E402
from server_process import start_server_process  # noqa: E402
from tiny_models import make_tiny_model  # noqa: E402
from tiny_service import CHAT_TEMPLATE, make_chat_model  # noqa: E402

from specdraft import GenerationConfig, SpeculativeGenerator, load_model  # noqa: E402
from specdraft.apps.model_pool import ModelPool  # noqa: E402
from specdraft.apps.service import create_app  # noqa: E402
from specdraft.apps.service.edge_model import endpoint_config  # noqa: E402

__all__ = [
    "KEY",
    "LiveServer",
    "draft_model",
    "free_port",
    "greedy_text",
    "laptop_endpoint",
    "make_chat_model",
    "verify_server",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def draft_model(tokenizer):
    """A small model with other weights than the server's, sharing its tokenizer and chat template."""
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    return make_tiny_model(chat_tokenizer, seed=1, layers=1, hidden=32)


def greedy_text(model, prompt_ids, max_new_tokens: int) -> str:
    return SpeculativeGenerator(model).generate(prompt_ids, None, GenerationConfig(max_new_tokens=max_new_tokens)).text


@contextlib.contextmanager
def verify_server(tmp_path) -> Iterator[str]:
    """The URL of a verify-server process (key ``KEY``), killed on exit."""
    keys = tmp_path / "verify-keys"
    keys.write_text(KEY + "\n")
    port = free_port()
    process = start_server_process("edge_server_main.py", port, str(keys))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def laptop_endpoint(server_url: str, draft, key: str = KEY, **config) -> Iterator[LiveServer]:
    """``specdraft edge serve``'s app for ``server_url`` drafting with ``draft`` (the edge model loaded
    through ``load_model`` with ``draft`` as its local model), live on loopback. Server calls may take
    60 s (``timeout_s``) before the server counts as lost: test machines are loaded."""
    config.setdefault("timeout_s", 60.0)
    service = endpoint_config(server_url, key, "tiny-draft", **config)
    pool = ModelPool(service.model)
    pool.add(service.model_name, load_model(service.model, draft))
    app = create_app(service, pool)
    with LiveServer(app) as live:
        yield live
