"""The edge demo page (``GET /demo/`` of ``specdraft edge serve``) in a real headless Chromium: ask a
question, wait for the streamed answer, read the page. The endpoint runs live on loopback and drafts
with a small local model; a verify-server process (``tests/edge/edge_server_main.py``) verifies.

Checks: the verified text on the page equals the server model's greedy answer; the round-trip time
shown updates while the answer streams; with the server gone the text is the local model's, shown
in the unverified style, and the summary counts it. Needs Debian's ``chromium`` and
``chromium-driver`` and ``selenium`` (see ``tests/apps/service/browser_support.py``)."""

import re

import pytest
from browser_support import By, WebDriverWait, texts
from edge_endpoint_support import draft_model, free_port, greedy_text, laptop_endpoint, make_chat_model, verify_server

QUESTION = "The quick brown fox"
MAX_TOKENS = 48
WAIT_S = 120

# counts every change of the round-trip display while the answer streams
WATCH_RTT = """
window.rttChanges = [];
new MutationObserver(() => window.rttChanges.push(document.getElementById("rtt").textContent))
  .observe(document.getElementById("rtt"), {childList: true, characterData: true, subtree: true});
"""


def ask(browser, url):
    browser.get(f"{url}/demo/")
    form = browser.find_element(By.ID, "ask-form")
    browser.execute_script("arguments[0].dataset.maxTokens = arguments[1];", form, str(MAX_TOKENS))
    browser.execute_script(WATCH_RTT)
    question = browser.find_element(By.ID, "question")
    assert question.get_property("value").strip(), "the page comes with an example question"
    question.clear()
    question.send_keys(QUESTION)
    browser.find_element(By.ID, "ask").click()
    WebDriverWait(browser, WAIT_S).until(
        lambda b: (
            b.execute_script("return window.edgeDemo.done === true;") or b.find_element(By.ID, "error").is_displayed()
        )
    )
    assert not browser.find_element(By.ID, "error").is_displayed(), browser.find_element(By.ID, "error").text


def page_text(browser, selector):
    return "".join(texts(browser, selector))


@pytest.fixture(scope="module")
def server_model(tokenizer):
    return make_chat_model(tokenizer)


def test_the_page_shows_the_servers_answer_and_a_live_round_trip_time(browser, tokenizer, server_model, tmp_path):
    messages = [{"role": "user", "content": QUESTION}]
    want = greedy_text(server_model, server_model.encode_chat(messages), MAX_TOKENS)
    with verify_server(tmp_path) as url, laptop_endpoint(url, draft_model(tokenizer)) as live:
        ask(browser, live.url)
    assert page_text(browser, "#final .verified") == want
    assert texts(browser, "#final .unverified") == []
    assert browser.find_element(By.ID, "drafted").text == ""  # nothing left in flight at the end
    rtt = browser.find_element(By.ID, "rtt").text
    assert re.fullmatch(r"\d+\.\d ms", rtt), rtt
    changes = browser.execute_script("return window.rttChanges;")
    assert len(changes) >= 2 and all(re.fullmatch(r"\d+\.\d ms", c) for c in changes), changes
    chunks = browser.execute_script("return window.edgeDemo.chunks;")
    speculation = chunks[-1]["speculation"]
    assert int(browser.find_element(By.ID, "round-trips").text) == speculation["round_trips"] >= 2
    assert f"{speculation['verified_tokens']} verified, 0 unverified" in browser.find_element(By.ID, "summary").text


def test_without_the_server_the_page_shows_the_local_text_as_unverified(browser, tokenizer):
    draft = draft_model(tokenizer)
    want = greedy_text(draft, draft.encode_chat([{"role": "user", "content": QUESTION}]), MAX_TOKENS)
    with laptop_endpoint(f"http://127.0.0.1:{free_port()}", draft, timeout_s=2.0) as live:
        ask(browser, live.url)
    assert page_text(browser, "#final .unverified") == want
    assert texts(browser, "#final .verified") == []
    unverified = browser.find_element(By.CSS_SELECTOR, "#final .unverified")
    assert unverified.value_of_css_property("text-decoration-style") == "dotted"
    assert "0 verified" in browser.find_element(By.ID, "summary").text
