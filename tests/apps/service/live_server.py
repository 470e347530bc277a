"""A real HTTP server on loopback for tests that drive the service as clients do (SDKs, fuzzers, browsers).

``LiveServer(app)`` serves a Flask app with waitress, set up as ``specdraft serve`` sets it up
(``server.waitress_options`` of the app's config), on ``127.0.0.1`` and a free port, in a daemon
thread; ``url`` is its base URL. Use it as a context manager; leaving it closes the listening socket
and stops waitress's worker threads (its ``close`` leaves them running: a session of tests would keep
hundreds, each with the thread pool torch's OpenMP gives a thread that ran a model, and with more such
threads than CPUs libgomp sleeps at every barrier, which slowed every later torch test).
"""

from __future__ import annotations

import threading
import time
import urllib.request

from waitress.server import create_server

from specdraft.apps.service.server import waitress_options


class LiveServer:
    def __init__(self, app, **overrides) -> None:
        self.app = app
        options = (
            {**waitress_options(app.extensions["specdraft"].config), **overrides}
            if "specdraft" in app.extensions
            else overrides
        )
        self._server = create_server(app, host="127.0.0.1", port=0, **options)
        self.port = self._server.effective_port
        self.url = f"http://127.0.0.1:{self.port}"
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="live-server", daemon=True)

    def _run(self) -> None:
        """waitress's loop; the error it may raise polling a socket that ``__exit__`` closed under it
        (EBADF: closing races the loop's poll) ends the loop quietly, any other error is raised."""
        try:
            self._server.run()
        except (OSError, ValueError):
            if not self._closing:
                raise

    def __enter__(self) -> "LiveServer":
        self._thread.start()
        deadline = time.monotonic() + 10
        while True:  # wait until it answers
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=2).read()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self._closing = True
        self._server.close()
        self._thread.join(timeout=5)
        self._server.task_dispatcher.shutdown(timeout=5)
        # the connections it accepted (a client's kept-alive ones): waitress's close leaves them open, and the
        # garbage collector's ResourceWarning would then fail whichever test happens to run at that moment
        for channel in list(self._server._map.values()):
            channel.close()
