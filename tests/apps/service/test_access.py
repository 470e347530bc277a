"""Who may call what (``specdraft.apps.service.access``): API keys and scopes, Host checks without
keys, and no cross-site writes. Every refusal is OpenAI-shaped JSON and changes nothing."""

import pytest
from hash_embedder import HashEmbedder
from tiny_service import make_app, make_chat_model

READER, WRITER = "reader-key-0123456789abcdef", "writer-key-0123456789abcdef"
DOCS = {"documents": [{"id": "fox", "text": "The quick brown fox jumps over the lazy dog."}]}


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "indexes"


@pytest.fixture
def keyless(model, root):
    return make_app(model, embedder=HashEmbedder(), index_root=str(root)).test_client()


@pytest.fixture
def keyed(model, root, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(f"{READER} read\n{WRITER} write\n")
    return make_app(model, embedder=HashEmbedder(), index_root=str(root), api_key_file=str(keys)).test_client()


def bearer(key):
    return {"Authorization": f"Bearer {key}"}


def assert_error(response, status, code):
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == code and body["error"]["type"] == "invalid_request_error"
    return body["error"]["message"]


def nothing_written(root):
    return not root.exists() or not any(root.iterdir())


# --- without keys: this machine only ----------------------------------------------------------------
@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_without_keys_loopback_host_names_are_served(keyless, host):
    assert keyless.get("/v1/models", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "192.168.1.5:8000"])
def test_without_keys_other_host_names_are_refused_so_dns_rebinding_cannot_reach_the_api(keyless, root, host):
    assert "answers only requests addressed to this machine" in assert_error(
        keyless.get("/v1/models", headers={"Host": host}), 421, "misdirected_request"
    )
    assert_error(keyless.post("/v1/rag/documents", json=DOCS, headers={"Host": host}), 421, "misdirected_request")
    assert nothing_written(root)


def test_an_allowed_host_name_is_served_without_keys(model):
    client = make_app(model, allowed_hosts=("proxy.internal",)).test_client()
    assert client.get("/v1/models", headers={"Host": "proxy.internal:80"}).status_code == 200


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data": '{"documents": [{"id": "a", "text": "b"}]}', "content_type": "text/plain"},
        {"data": {"documents": "x"}},  # a form
        {"data": '{"documents": [{"id": "a", "text": "b"}]}'},  # no content type at all
    ],
)
def test_bodies_that_are_not_json_are_refused_so_pages_cannot_post_them_without_asking(keyless, root, kwargs):
    assert "Content-Type: application/json" in assert_error(
        keyless.post("/v1/rag/documents", **kwargs), 415, "unsupported_media_type"
    )
    assert nothing_written(root)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://localhost:9999"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_requests_from_pages_of_other_origins_may_not_send_bodies(keyless, root, headers):
    assert_error(keyless.post("/v1/rag/documents", json=DOCS, headers=headers), 403, "cross_site_request")
    assert_error(
        keyless.post("/v1/completions", json={"prompt": "hi", "max_tokens": 1}, headers=headers),
        403,
        "cross_site_request",
    )
    assert nothing_written(root)


def test_the_servers_own_pages_and_allowed_origins_may_send_bodies(model, root):
    client = make_app(
        model, embedder=HashEmbedder(), index_root=str(root), allowed_origins=("https://app.example",)
    ).test_client()
    for origin in ("http://localhost", "https://app.example"):
        response = client.post(
            "/v1/rag/documents",
            json={"index": "o" + str(len(origin)), **DOCS},
            headers={"Origin": origin, "Sec-Fetch-Site": "same-origin"},
        )
        assert response.status_code == 200, response.get_json()


def test_unknown_routes_keep_their_404_and_405(keyless):
    assert keyless.post("/v1/nope", data="x", content_type="text/plain").status_code == 404
    assert keyless.put("/v1/models", data="x", content_type="text/plain").status_code == 405


# --- with keys ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/models", "/v1/rag/indexes"])
def test_with_keys_the_api_needs_a_valid_bearer_key(keyed, path):
    for headers in ({}, {"Authorization": "Basic abc"}, bearer(""), bearer("not-a-key-0123456789")):
        response = keyed.get(path, headers=headers)
        assert_error(response, 401, "invalid_api_key")
        assert response.headers["WWW-Authenticate"] == "Bearer"
    assert keyed.get(path, headers=bearer(READER)).status_code == 200
    assert keyed.get(path, headers=bearer(WRITER)).status_code == 200


def test_a_wrong_key_is_never_echoed(keyed):
    response = keyed.get("/v1/models", headers=bearer("my-secret-guess-0123456789"))
    assert "my-secret-guess" not in response.get_data(as_text=True)


def test_a_rejected_key_generates_nothing(keyed):
    assert_error(keyed.post("/v1/completions", json={"prompt": "hi", "max_tokens": 1}), 401, "invalid_api_key")
    assert not keyed.application.extensions["specdraft"].loaded


def test_adding_documents_needs_a_write_key(keyed, root):
    assert "write scope" in assert_error(
        keyed.post("/v1/rag/documents", json=DOCS, headers=bearer(READER)), 403, "insufficient_scope"
    )
    assert nothing_written(root)
    response = keyed.post("/v1/rag/documents", json=DOCS, headers=bearer(WRITER))
    assert response.status_code == 200 and response.get_json()["created"]
    query = {"question": "What does the fox do?", "max_tokens": 4}
    assert keyed.post("/v1/rag/query", json=query, headers=bearer(READER)).status_code == 200


def test_with_keys_health_and_the_demo_pages_stay_open_and_any_host_is_served(keyed):
    assert keyed.get("/healthz").status_code == 200
    assert keyed.get("/demo/grammar").status_code == 200
    assert keyed.get("/demo/rag").status_code == 200
    assert keyed.get("/v1/models", headers={"Host": "api.example.com", **bearer(READER)}).status_code == 200


def test_with_keys_cross_site_bodies_are_still_refused(keyed, root):
    headers = {"Origin": "http://evil.example", **bearer(WRITER)}
    assert_error(keyed.post("/v1/rag/documents", json=DOCS, headers=headers), 403, "cross_site_request")
    assert nothing_written(root)
