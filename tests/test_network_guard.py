"""The test suite itself cannot reach the internet."""

import socket

import pytest
from pytest_socket import SocketBlockedError, SocketConnectBlockedError


def test_non_loopback_connection_is_blocked() -> None:
    with pytest.raises((SocketBlockedError, SocketConnectBlockedError)):
        socket.create_connection(("93.184.216.34", 80), timeout=1)
