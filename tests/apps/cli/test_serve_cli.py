"""``specdraft serve`` as users start it: a real process on waitress, keys, refusals before loading."""

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

KEY = "cli-test-key-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(*args):
    return subprocess.run(
        [sys.executable, "-m", "specdraft.apps.cli", "serve", "--lazy", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_binding_another_address_without_keys_is_refused_with_a_clear_message():
    done = serve("--host", "0.0.0.0", "--port", str(free_port()))
    assert done.returncode == 2
    assert "refusing to listen on '0.0.0.0' without API keys" in done.stderr and "Traceback" not in done.stderr


def test_a_bad_key_file_is_refused(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text("short read\n")
    done = serve("--api-key-file", str(keys), "--port", str(free_port()))
    assert done.returncode == 2 and "at least 16 characters" in done.stderr


def call(url, key=None, body=None):
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    request = urllib.request.Request(url, None if body is None else json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_serve_runs_waitress_and_requires_keys_when_given(tiny_checkpoint, tmp_path):
    path, _ = tiny_checkpoint
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY} read\n")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specdraft.apps.cli",
            "serve",
            "--model",
            str(path),
            "--device",
            "cpu",
            "--port",
            str(port),
            "--api-key-file",
            str(keys),
            "--index-root",
            str(tmp_path / "idx"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, headers, body = call(base + "/healthz")
                break
            except OSError:
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.3)
        assert status == 200 and headers["Server"] == "specdraft"  # waitress, not Flask's development server
        status, headers, body = call(base + "/v1/completions", body={"prompt": "hi", "max_tokens": 2})
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        status, _, body = call(base + "/v1/completions", KEY, {"prompt": "hi", "max_tokens": 2})
        assert status == 200 and body["usage"]["completion_tokens"] == 2
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert KEY not in err  # keys are never logged
    assert "API keys required" in err


def test_a_model_that_cannot_be_loaded_is_a_clear_error_not_a_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "specdraft.apps.cli", "serve", "--model", "/nonexistent", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "specdraft: error:" in done.stderr and "Traceback" not in done.stderr
