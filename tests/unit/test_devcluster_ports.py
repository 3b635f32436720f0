"""Ports for the control plane's components come from below the ephemeral range, so an outgoing
connection cannot take one between its choice and the component's bind."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from devcluster import ports


@pytest.mark.parametrize(
    ("port_range", "below"),
    [
        pytest.param("32768\t60999\n", 32768, id="Linux default range"),
        pytest.param("20000 60999\n", 20000, id="a lowered range"),
    ],
)
def test_a_free_port_is_below_the_ephemeral_range_and_bindable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, port_range: str, below: int
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text(port_range)
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", range_file)
    chosen = {ports.free_port() for _ in range(20)}
    assert all(ports.LOWEST <= port < below for port in chosen)
    for port in chosen:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_not_chosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        range_file = tmp_path / "ip_local_port_range"
        range_file.write_text(f"{port + 2} 60999")  # the candidates: port and port + 1
        monkeypatch.setattr(ports, "EPHEMERAL_RANGE", range_file)
        monkeypatch.setattr(ports, "LOWEST", port)
        chosen = {ports.free_port() for _ in range(20)}
    assert port not in chosen


def test_without_room_below_the_range_any_free_port_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("1024 65535")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", range_file)
    port = ports.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_an_unreadable_range_falls_back_to_linux_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "missing")
    assert ports.ephemeral_start() == 32768
