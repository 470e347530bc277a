"""Fixtures shared by the tests of ``specdraft.apps``: a headless Chromium for the pages' browser tests
(tests/apps/service; helpers and flags in ``browser_support``)."""

import os

import pytest
from browser_support import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS, webdriver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium (a fresh profile for each test module), or a failure that says how to install it."""
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
