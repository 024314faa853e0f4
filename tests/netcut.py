"""A TCP proxy that can black-hole a connection, for network-partition tests."""

from __future__ import annotations

import socket
import threading
import time


class BlackHole:
    """A TCP proxy to PostgreSQL that can be cut: it then forwards nothing either way and
    closes nothing, as a network partition looks to both ends."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.cut = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.cut.is_set():
                self.conns.append(c)  # accepted, never answered
                continue
            u = socket.create_connection(self.target)
            self.conns += [c, u]
            for src, dst in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:  # the peer closed: pass the close on (a killed daemon's socket)
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            while self.cut.is_set():
                time.sleep(0.05)  # held: the partition swallows it
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()
