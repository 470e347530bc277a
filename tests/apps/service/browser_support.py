"""Driving the demo pages in a real headless Chromium: the app on a free port, the browser, helpers.

Needs Debian's ``chromium`` and ``chromium-driver`` (``scripts/setup.sh`` installs them when it runs
as root) and the ``selenium`` package (the ``test`` extra); without them the ``browser`` fixture
fails and says how to install them. Test modules import the fixtures they use from here.
"""

import os
import threading

import pytest
from werkzeug.serving import make_server

try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the browser fixture fails and says how to install it
    webdriver = By = WebDriverWait = None

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1100,1300",
)
WAIT_S = 20

# Records every JSON answer the page receives, in order, as window.answers.
RECORD_ANSWERS = """
window.answers = [];
const fetchOriginal = window.fetch;
window.fetch = async (...args) => {
  const response = await fetchOriginal(...args);
  window.answers.push(await response.clone().json().catch(() => null));
  return response;
};
"""


@pytest.fixture(scope="module")
def server(app):
    """The app on a free port, served from a background thread; its base URL."""
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, name="demo-server", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=10)
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: the demo page's browser test needs Debian's Chromium. "
            "Install it as root with `apt-get install -y chromium chromium-driver` (scripts/setup.sh does "
            "this when run as root or with passwordless sudo).",
            pytrace=False,
        )
    if webdriver is None:
        pytest.fail("selenium is not installed: run `.venv/bin/pip install -e '.[test]'`", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    yield driver
    driver.quit()


def texts(browser, selector):
    """The text of every element matching the CSS ``selector``, in document order."""
    return browser.execute_script(f"return [...document.querySelectorAll({selector!r})].map((n) => n.textContent);")
