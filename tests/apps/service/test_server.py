"""Running the service (``specdraft.apps.service.server``): no keys, no address but loopback."""

import pytest

from specdraft.apps.service import ServiceConfig
from specdraft.apps.service.server import UnsafeBind, check_bind, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]", "LOCALHOST"])
def test_loopback_addresses(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", ""])
def test_addresses_other_machines_can_reach(host):
    assert not is_loopback(host)


def test_without_keys_only_loopback_may_be_bound(tmp_path):
    check_bind("127.0.0.1", ServiceConfig())
    with pytest.raises(UnsafeBind, match="--api-key-file"):
        check_bind("0.0.0.0", ServiceConfig())
    keys = tmp_path / "keys"
    keys.write_text("a-key-of-enough-length write\n")
    check_bind("0.0.0.0", ServiceConfig(api_key_file=str(keys)))


def _raw_post(url: str, body: bytes, chunked: bool) -> tuple[int, dict]:
    import json
    import socket

    host, port = url.removeprefix("http://").split(":")
    if chunked:
        head = "Transfer-Encoding: chunked"
        body = (
            b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + 100]), body[i : i + 100]) for i in range(0, len(body), 100))
            + b"0\r\n\r\n"
        )
    else:
        head = f"Content-Length: {len(body)}"
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: "
            f"close\r\n{head}\r\n\r\n".encode()
            + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1])


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_a_413_also_when_sent_in_chunks(tokenizer, chunked):
    import json

    from live_server import LiveServer
    from tiny_service import make_app, make_chat_model

    app = make_app(make_chat_model(tokenizer), max_request_bytes=1000)
    with LiveServer(app) as server:
        status, body = _raw_post(server.url, json.dumps({"prompt": "x" * 5000, "max_tokens": 1}).encode(), chunked)
    assert status == 413 and "larger than the limit of 1000 bytes" in body["error"]["message"]
