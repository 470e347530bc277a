"""The RAG demo page in a real headless Chromium: add documents, ask, follow a shaded run to its passage.

The app (a tiny random-initialised chat model, hash-embedding indexes in a temporary folder) runs on
a free 127.0.0.1 port; the page's own API answers are recorded by wrapping ``window.fetch`` and the
page is checked against them.
"""

import pytest
from browser_support import RECORD_ANSWERS, WAIT_S, By, WebDriverWait, texts
from hash_embedder import HashEmbedder
from tiny_service import make_app, make_chat_model

# The tiny chat model answers "=vedae6..." to anything: this passage lets the reference drafter
# draft runs of it, so the answer has shaded runs linked to this passage.
ECHO_TEXT = "The fox answers =vedae6 to every question it is asked."
QUESTION = "The fox answers every question it is asked with what?"


@pytest.fixture(scope="module")
def app(tokenizer, tmp_path_factory):
    root = tmp_path_factory.mktemp("rag-demo") / "indexes"
    return make_app(make_chat_model(tokenizer), embedder=HashEmbedder(), index_root=str(root))


def open_page(browser, server):
    browser.get(f"{server}/demo/rag")
    browser.execute_script(RECORD_ANSWERS)


def wait_for(browser, predicate):
    WebDriverWait(browser, WAIT_S).until(lambda _: predicate())


def ask(browser, question: str):
    field = browser.find_element(By.ID, "question")
    field.clear()
    field.send_keys(question)
    browser.find_element(By.ID, "ask").click()
    results, error = browser.find_element(By.ID, "results"), browser.find_element(By.ID, "error")
    wait_for(browser, lambda: results.is_displayed() or error.is_displayed())
    return results, error


def test_add_ask_and_follow_a_drafted_run_to_its_passage(browser, server, app, tmp_path):
    open_page(browser, server)
    assert browser.find_element(By.ID, "question").get_property("value"), "the page comes with an example question"

    # add the examples, then one typed document
    browser.find_element(By.CSS_SELECTOR, "#add-documents summary").click()
    add_status = browser.find_element(By.ID, "add-status")
    browser.find_element(By.ID, "add-examples").click()
    wait_for(browser, lambda: add_status.text.startswith("Added"))
    assert add_status.text == "Added 3 documents (3 passages); index default holds 3."
    browser.find_element(By.ID, "doc-id").send_keys("fox")
    browser.find_element(By.ID, "doc-text").send_keys(ECHO_TEXT)
    browser.find_element(By.ID, "add").click()
    wait_for(browser, lambda: add_status.text.endswith("holds 4."))

    top_k = browser.find_element(By.ID, "top-k")  # the tiny tokenizer makes long prompts: one passage
    top_k.clear()
    top_k.send_keys("1")
    results, error = ask(browser, QUESTION)
    assert not error.is_displayed(), error.text
    answer = browser.execute_script("return window.answers;")[-1]
    expected = app.test_client().post("/v1/rag/query", json={"question": QUESTION, "top_k": 1}).get_json()
    assert answer["token_ids"] == expected["token_ids"]

    # the answer as the API spells it, drafted runs shaded, each linked run pointing into its passage
    assert browser.find_element(By.ID, "answer").get_property("textContent") == answer["answer"]
    linked = [s for s in answer["spans"] if s["source"] == "draft" and s["passage"]]
    assert linked, "the tiny model accepts runs drafted from the fox passage"
    assert texts(browser, "#answer a.draft") == [s["text"] for s in linked]
    assert texts(browser, "#passages li .meta") and len(texts(browser, "#passages li")) == len(answer["passages"])
    links = browser.find_elements(By.CSS_SELECTOR, "#answer a.draft")
    for link, span in zip(links, linked):
        mark = browser.find_element(By.ID, link.get_attribute("href").split("#")[1])
        passage = mark.find_element(By.XPATH, "ancestor::li")
        assert passage.get_attribute("data-id") == span["passage"] == "fox#0"
        assert span["text"].strip() in mark.text or mark.text in span["text"]
    links[0].click()
    wait_for(
        browser,
        lambda: (
            "active" in browser.find_element(By.CSS_SELECTOR, "#passages li[data-id='fox#0']").get_attribute("class")
        ),
    )
    stats = answer["stats"]
    assert (
        browser.find_element(By.ID, "draft-share").text
        == f"{stats['accepted_tokens']} of {stats['generated_tokens']} tokens drafted"
    )

    screenshot = tmp_path / "rag-demo.png"
    assert browser.save_screenshot(str(screenshot)) and screenshot.stat().st_size > 10_000


def test_api_errors_are_shown_on_the_page(browser, server):
    open_page(browser, server)
    index = browser.find_element(By.ID, "index")
    index.clear()
    index.send_keys("nothing-here")
    results, error = ask(browser, QUESTION)
    assert error.text.startswith("Error 404: no index named 'nothing-here'")
    assert not results.is_displayed()
    index.clear()
    index.send_keys("default")
    _, error = ask(browser, "   ")
    assert error.text == "Error 400: question must not be empty"


@pytest.mark.parametrize("retriever", ["dense", "bm25"])
def test_iterative_answer_shows_each_retrieval_and_the_time_split(browser, server, app, retriever):
    client = app.test_client()
    client.post("/v1/rag/documents", json={"documents": [{"id": f"iter-{retriever}", "text": ECHO_TEXT}]})
    open_page(browser, server)
    browser.find_element(By.ID, "iterative").click()
    browser.find_element(By.ID, "speculative-retrieval").click()
    browser.find_element(By.CSS_SELECTOR, f"#retriever option[value='{retriever}']").click()
    results, error = ask(browser, QUESTION)
    assert not error.is_displayed(), error.text
    answer = browser.execute_script("return window.answers;")[-1]
    plain = client.post(
        "/v1/rag/query", json={"question": QUESTION, "iterative": True, "retriever": retriever}
    ).get_json()
    assert answer["speculative_retrieval"] is True and answer["retriever"] == retriever
    assert answer["token_ids"] == plain["token_ids"]
    assert [r["docs"] for r in answer["retrievals"]] == [r["docs"] for r in plain["retrievals"]]

    assert browser.find_element(By.ID, "answer").get_property("textContent") == answer["answer"]
    assert browser.find_element(By.ID, "retrievals-card").is_displayed()
    assert not browser.find_element(By.ID, "passages-card").is_displayed()
    items = browser.find_elements(By.CSS_SELECTOR, "#retrievals li")
    assert [i.get_attribute("data-status") for i in items] == [r["status"] for r in answer["retrievals"]]
    assert texts(browser, "#retrievals li code") == [r["doc_ids"][0] for r in answer["retrievals"]]
    labels = {"exact": "retriever", "confirmed": "cache, confirmed", "rolled_back": "rolled back"}
    assert texts(browser, "#retrievals li .badge") == [labels[r["status"]] for r in answer["retrievals"]]
    timing = browser.find_element(By.ID, "retrieval-time").text
    assert timing.startswith("retrieving ") and "generating " in timing and "wall " in timing

    browser.find_element(By.ID, "iterative").click()  # back to the drafting answer: the passages again
    ask(browser, QUESTION)
    wait_for(browser, lambda: browser.find_element(By.ID, "passages-card").is_displayed())
    assert not browser.find_element(By.ID, "retrievals-card").is_displayed()
