"""What the remote-studio tests share: a real `engram serve` child process, a
network that can be cut (a TCP proxy), a self-signed certificate, and a keyring
that is never the user's."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import re
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGRAM = [sys.executable, "-c", "import sys; from app.main import main; sys.exit(main())"]


@contextlib.contextmanager
def engram_serve(home: Path, token: str, *extra: str) -> Iterator[str]:
    """`engram serve` on 127.0.0.1 and a free port over `home`, with `token`; its
    URL (https with --certfile) once it listens. Stopped (SIGTERM) afterwards."""
    env = {**os.environ, "ENGRAM_API_TOKEN": token, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [*ENGRAM, "--home", str(home), "serve", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    said = []
    try:
        url = None
        for line in process.stdout:
            said.append(line)
            found = re.search(r"https?://127\.0\.0\.1:\d+", line)
            if found:
                url = found.group(0)
                break
        assert url, f"engram serve printed no address: {''.join(said)}"
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a loaded machine: do not leave it behind
            process.kill()
            process.wait(timeout=30)
            print(f"engram serve took over a minute to stop: {process.stdout.read()[-2000:]}")


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of `target` (host, port): the network
    between the studio and its server, which a test can cut (every connection
    dropped, new ones closed at once: what a pulled cable or a sleeping laptop
    looks like to the client) and restore."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._up = threading.Event()
        self._up.set()
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        self._up.clear()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._stopped = True
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()
            with self._lock:
                self._open.difference_update((a, b))


def self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for `host` (and localhost) and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "engram test server")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = folder / "server.pem", folder / "server.key"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    keyfile.chmod(0o600)
    return certfile, keyfile


def memory_keyring():
    """A keyring backend in memory: the studio's keyring path, tested without ever
    touching the user's own keyring."""
    from keyring.backend import KeyringBackend

    class Memory(KeyringBackend):
        priority = 1

        def __init__(self) -> None:
            super().__init__()
            self.passwords: dict[tuple[str, str], str] = {}

        def get_password(self, service, username):
            return self.passwords.get((service, username))

        def set_password(self, service, username, password):
            self.passwords[(service, username)] = password

        def delete_password(self, service, username):
            self.passwords.pop((service, username), None)

    return Memory()
