"""A host that accepts TCP connections and never answers: the server that hangs (a
wedged Ollama, a proxy with nothing behind it). Requests are read and dropped; the
connections stay open until the client gives up or the host is stopped."""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class SilentHost:
    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.setblocking(False)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.accepted = 0
        """Connections accepted so far."""
        self._open: set[socket.socket] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="silent-host", daemon=True)

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed by their client."""
        return len(self._open)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn in (*self._open, self._listener):
            conn.close()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _events in selector.select(timeout=0.05):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is self._listener:
                        with suppress(BlockingIOError):
                            conn, _addr = sock.accept()
                            conn.setblocking(False)
                            self._open.add(conn)
                            self.accepted += 1
                            selector.register(conn, selectors.EVENT_READ)
                        continue
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    except ConnectionError:
                        data = b""
                    if not data:  # the client closed its end (else: read and dropped)
                        selector.unregister(sock)
                        self._open.discard(sock)
                        sock.close()


@contextmanager
def silent_host() -> Iterator[SilentHost]:
    """A running ``SilentHost`` on a free port of 127.0.0.1 (its ``url``)."""
    host = SilentHost()
    host.start()
    try:
        yield host
    finally:
        host.stop()
