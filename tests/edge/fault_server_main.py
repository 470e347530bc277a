"""A verify server in a process of its own for the fault tests:
``python fault_server_main.py PORT KEYFILE [MAX_QUEUE]`` serves the tiny chat model (the weights
``tiny_service.make_chat_model`` builds) with ``--edge`` on 127.0.0.1:PORT until killed; ``MAX_QUEUE``
lets many clients' calls wait for the generation gate instead of being refused (429)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "apps", "service")]

from tiny_models import make_tokenizer  # noqa: E402
from tiny_service import make_app, make_chat_model  # noqa: E402
from waitress import serve  # noqa: E402

from specdraft.apps.service.edge_sessions import EdgeConfig  # noqa: E402
from specdraft.apps.service.limits import LimitConfig  # noqa: E402
from specdraft.apps.service.server import waitress_options  # noqa: E402

if __name__ == "__main__":
    port, keys = int(sys.argv[1]), sys.argv[2]
    max_queue = int(sys.argv[3]) if len(sys.argv) > 3 else LimitConfig().max_queue
    app = make_app(
        make_chat_model(make_tokenizer()),
        api_key_file=keys,
        edge=True,
        limits=LimitConfig(max_queue=max_queue),
        edge_config=EdgeConfig(max_sessions_per_key=8),
    )
    options = waitress_options(app.extensions["specdraft"].config)
    options["threads"] = max(options.get("threads", 4), 8)
    serve(app, host="127.0.0.1", port=port, **options)
