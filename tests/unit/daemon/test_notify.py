"""The daemon's word to systemd (deploy/dsbra.service is Type=notify), on a real datagram socket."""

from __future__ import annotations

import socket

from dsbra.daemon.service import notify_systemd


def test_ready_reaches_the_notify_socket_and_nothing_is_sent_outside_systemd(monkeypatch):
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0dsbra-test-notify")
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@dsbra-test-notify")
        notify_systemd("READY=1")
        assert sock.recv(64) == b"READY=1"
        monkeypatch.delenv("NOTIFY_SOCKET")
        notify_systemd("READY=1")  # outside systemd: a no-op
        sock.settimeout(0.2)
        try:
            sock.recv(64)
            raise AssertionError("sent without NOTIFY_SOCKET")
        except socket.timeout:
            pass


def test_an_unreachable_socket_is_a_logged_warning(monkeypatch, caplog):
    monkeypatch.setenv("NOTIFY_SOCKET", "@dsbra-test-nobody-listens")
    notify_systemd("READY=1")
    assert "cannot notify systemd (READY=1)" in caplog.text
