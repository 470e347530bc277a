"""A verify server in a process of its own, for the fault tests: ``python edge_server_main.py PORT KEYFILE``
serves the tiny chat model (the same weights ``tiny_service.make_chat_model`` builds) with ``--edge``
on 127.0.0.1:PORT until killed."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "apps", "service")]

from tiny_models import make_tokenizer  # noqa: E402
from tiny_service import make_app, make_chat_model  # noqa: E402
from waitress import serve  # noqa: E402

from specdraft.apps.service.server import waitress_options  # noqa: E402

if __name__ == "__main__":
    port, keys = int(sys.argv[1]), sys.argv[2]
    app = make_app(make_chat_model(make_tokenizer()), api_key_file=keys, edge=True)
    serve(app, host="127.0.0.1", port=port, **waitress_options(app.extensions["specdraft"].config))
