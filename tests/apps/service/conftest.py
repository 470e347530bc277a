"""Fixtures shared by the service's tests: ``server``, the module's ``app`` on a free port (the demo
pages' browser tests)."""

import threading

import pytest
from werkzeug.serving import make_server


@pytest.fixture(scope="module")
def server(app):
    """The module's ``app`` on a free port, served from a background thread; its base URL."""
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, name="demo-server", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=10)
    httpd.server_close()
