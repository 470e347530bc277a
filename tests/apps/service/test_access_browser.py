"""A page of another site, opened in a real headless Chromium, tries to write into the RAG indexes
of a keyless server on loopback (the attack the service once let through): a ``no-cors``
``text/plain`` POST, a form post, and a JSON ``cors`` fetch. None of them may create an index."""

import http.server
import threading
import time

from browser_support import WAIT_S, WebDriverWait
from hash_embedder import HashEmbedder
from live_server import LiveServer
from tiny_service import make_app, make_chat_model

ATTACK = """<!doctype html><html><body><form id="f" method="POST" enctype="text/plain" target="sink">
<input name='{"documents": [{"id": "x", "text": "pwned", "index": "' value='"}]}'></form>
<iframe name="sink"></iframe><script>
window.results = [];
const url = "%(api)s/v1/rag/documents";
const doc = JSON.stringify({index: "pwned", documents: [{id: "x", text: "pwned"}]});
fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: doc})
  .then(() => window.results.push("no-cors sent"), e => window.results.push("no-cors failed"));
fetch(url, {method: "POST", mode: "cors", headers: {"Content-Type": "application/json"}, body: doc})
  .then(r => window.results.push("cors " + r.status), e => window.results.push("cors blocked"));
document.getElementById("f").action = url; document.getElementById("f").submit();
window.results.push("form sent");
</script></body></html>"""


class _AttackerSite:
    """Serves ATTACK on another loopback port: another origin than the API's."""

    def __init__(self, api: str) -> None:
        page = (ATTACK % {"api": api}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_page_of_another_site_cannot_write_into_the_indexes(browser, tokenizer, tmp_path):
    root = tmp_path / "indexes"
    app = make_app(make_chat_model(tokenizer), embedder=HashEmbedder(), index_root=str(root))
    with LiveServer(app) as api:
        attacker = _AttackerSite(api.url)
        try:
            browser.get(attacker.url)
            WebDriverWait(browser, WAIT_S).until(lambda b: len(b.execute_script("return window.results || []")) >= 3)
            results = browser.execute_script("return window.results")
            time.sleep(1.0)  # let the form post land, if it were going to
        finally:
            attacker.close()
    assert "cors blocked" in results, results  # no CORS grant: the JSON request never leaves the browser
    assert not root.exists() or not any(root.iterdir()), list(root.rglob("*"))
