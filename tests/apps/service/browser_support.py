"""Driving the demo pages in a real headless Chromium: its flags and helpers.

Needs Debian's ``chromium`` and ``chromium-driver`` (``scripts/setup.sh`` installs them when it runs
as root) and the ``selenium`` package (the ``test`` extra); without them the ``browser`` fixture
(tests/apps/conftest.py) fails and says how to install them. The demo
pages' ``server`` fixture is tests/apps/service/conftest.py's.
"""

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


def texts(browser, selector):
    """The text of every element matching the CSS ``selector``, in document order."""
    return browser.execute_script(f"return [...document.querySelectorAll({selector!r})].map((n) => n.textContent);")
