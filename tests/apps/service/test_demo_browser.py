"""The grammar demo page in a real headless Chromium: type a text, click Correct, read the page.

The app (a tiny random-initialised model) runs on a free 127.0.0.1 port in a background thread;
Chromium is driven through chromedriver with selenium. The test records the API answer the page
itself received (by wrapping ``window.fetch``) and checks that the page shows exactly that: the
corrected text, its edits, the spans drafted from the input, and the measured speedup; and, when
the API's check of the answer fails, a warning with its reasons instead of presenting corrections.

Needs Debian's ``chromium`` and ``chromium-driver`` (``scripts/setup.sh`` installs them when it
runs as root) and the ``selenium`` package (the ``test`` extra); without them the test fails and
says how to install them.
"""

import re

import pytest
from browser_support import RECORD_ANSWERS, WAIT_S, By, WebDriverWait, texts
from tiny_service import GRAMMAR_TEXT, make_app, make_chat_model

TEXT = GRAMMAR_TEXT  # the tiny model accepts part of its copy, so the page has drafted spans to shade

# The corrected text as the "Corrections" view reads without its struck-through deletions.
DIFF_WITHOUT_DELETIONS = """
const copy = document.getElementById("diff").cloneNode(true);
copy.querySelectorAll("del").forEach((node) => node.remove());
return copy.textContent;
"""
SPEEDUP = re.compile(
    r"^\d+\.\d× (faster|slower) than plain decoding \(\d+\.\d+ s vs \d+\.\d+ s\), "
    r"identical output, \d+ vs \d+ model passes$"
)


@pytest.fixture(scope="module")
def app(tokenizer):
    return make_app(make_chat_model(tokenizer))


def submit(browser, server, text):
    """Open the page, type ``text`` over the example, click Correct and wait for an answer or an error."""
    browser.get(f"{server}/demo/grammar")
    browser.execute_script(RECORD_ANSWERS)
    textarea = browser.find_element(By.ID, "text")
    assert textarea.get_property("value").strip(), "the page comes with an example text"
    textarea.clear()
    textarea.send_keys(text)
    browser.find_element(By.ID, "correct").click()
    results, error = browser.find_element(By.ID, "results"), browser.find_element(By.ID, "error")
    WebDriverWait(browser, WAIT_S).until(lambda _: results.is_displayed() or error.is_displayed())
    return results, error


def test_correct_shows_the_answer_its_edits_drafted_spans_and_speedup(browser, server, app, tmp_path):
    results, error = submit(browser, server, TEXT)
    assert not error.is_displayed(), error.text
    [answer] = browser.execute_script("return window.answers;")
    expected = app.test_client().post("/v1/grammar/correct", json={"text": TEXT}).get_json()
    assert answer["corrected"] == expected["corrected"]

    # the corrected text, in both views
    assert browser.execute_script(DIFF_WITHOUT_DELETIONS) == answer["corrected"]
    assert browser.execute_script('return document.getElementById("sources").textContent;') == answer["corrected"]

    # edits: replacements highlighted, originals struck through, in the text's order
    edits = sorted(answer["edits"], key=lambda e: (e["start"], e["end"]))
    assert edits, "the tiny model changes the text"
    assert texts(browser, "#diff ins") == [e["replacement"] for e in edits if e["replacement"]]
    assert texts(browser, "#diff del") == [e["original"] for e in edits if e["original"]]

    # spans the model accepted from the copy of the input are shaded, the rest is plain
    drafted = [piece["text"] for piece in answer["pieces"] if piece["source"] == "draft"]
    assert drafted, "the tiny model should accept part of the copy of its input"
    assert texts(browser, "#sources .draft") == drafted

    speedup = browser.find_element(By.ID, "speedup").text
    assert SPEEDUP.match(speedup), speedup
    comparison = answer["comparison"]
    assert f"{comparison['speculative_forward_passes']} vs {comparison['plain_forward_passes']} model passes" in speedup

    screenshot = tmp_path / "grammar-demo.png"
    assert browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000


def test_api_errors_are_shown_on_the_page(browser, server):
    results, error = submit(browser, server, "   ")
    assert error.text == "Error 400: text must not be empty"
    assert not results.is_displayed()


def test_an_answer_that_fails_the_check_is_shown_with_a_warning_not_as_corrections(browser, server):
    # the tiny model loops on TEXT until its token limit: the API flags it, and so must the page
    results, error = submit(browser, server, TEXT)
    assert not error.is_displayed(), error.text
    [answer] = browser.execute_script("return window.answers;")
    assert answer["quality"]["ok"] is False
    warning = browser.find_element(By.ID, "quality")
    assert warning.is_displayed()
    assert "This is not a correction." in warning.text
    assert texts(browser, "#quality-warnings li") == answer["quality"]["warnings"]
    assert browser.find_element(By.ID, "diff-title").text == "The model's answer (not a correction)"
    # the text is still shown, as the model wrote it
    assert browser.execute_script(DIFF_WITHOUT_DELETIONS) == answer["corrected"]

    # an answer that passes the check is shown as corrections, with no warning
    results, error = submit(browser, server, "=vedae6")
    [answer] = browser.execute_script("return window.answers;")
    assert answer["quality"]["ok"] is True
    assert not browser.find_element(By.ID, "quality").is_displayed()
    assert browser.find_element(By.ID, "diff-title").text == "Corrections"
