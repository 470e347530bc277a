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
