"""A TCP proxy that a test can cut, to break a database without stopping it.

The machine's PostgreSQL is shared: a test never stops it. It reaches it
through :class:`CuttableProxy` instead; :meth:`cut` closes every proxied
connection and refuses new ones (what a network partition or a database
restart looks like to the client), :meth:`restore` accepts again.
"""

import socket
import threading

import fixtures


class CuttableProxy(fixtures.Fixture):
    """127.0.0.1:``port`` forwarded to ``target`` (host, port)."""

    def __init__(self, target):
        super().__init__()
        self.target = target
        self.port = None

    def _setUp(self):
        self._lock = threading.Lock()
        self._conns = set()
        self._listener = None
        self.accepted = 0
        self.restore()
        self.addCleanup(self.cut)

    def restore(self):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(('127.0.0.1', self.port or 0))
        self.port = sock.getsockname()[1]
        sock.listen(64)
        self._listener = sock
        threading.Thread(target=self._accept, args=(sock,),
                         daemon=True).start()

    def cut(self):
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener is not None:
            listener.close()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, 5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns |= {client, upstream}
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
