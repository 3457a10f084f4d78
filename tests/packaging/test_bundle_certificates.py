"""The bundle's entry trusts this system's certificate authorities: the OpenSSL it
carries looks where the build machine's distribution keeps them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import certifi

REPO = Path(__file__).resolve().parents[2]


def _entry():
    spec = importlib.util.spec_from_file_location(
        "engram_entry", REPO / "packaging" / "engram_entry.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its main runs only as __main__
    return module


def _choose(environ=None, found_defaults=False, platform="linux", present=(), certifi_file=None):
    return _entry().ca_file_to_trust(
        environ or {}, found_defaults, platform, lambda path: path in present,
        lambda: certifi_file,
    )  # fmt: skip


def test_where_openssl_finds_its_own_places_nothing_changes():
    assert _choose(found_defaults=True, present=("/etc/pki/tls/certs/ca-bundle.crt",)) is None


def test_on_another_distribution_its_own_file_is_trusted():
    fedora = "/etc/pki/tls/certs/ca-bundle.crt"
    assert _choose(present=(fedora,), certifi_file="/b/certifi/cacert.pem") == fedora


def test_without_a_system_file_certifi_is_trusted():
    assert _choose(certifi_file="/b/certifi/cacert.pem") == "/b/certifi/cacert.pem"
    assert _choose(certifi_file=None) is None  # nothing to point at: left as it is


def test_the_users_setting_and_windows_are_left_alone():
    debian = "/etc/ssl/certs/ca-certificates.crt"
    assert _choose({"SSL_CERT_FILE": "/mine.pem"}, present=(debian,)) is None
    assert _choose({"SSL_CERT_DIR": "/mine"}, present=(debian,)) is None
    assert _choose(platform="win32", present=(debian,)) is None


def test_a_file_named_after_ssl_is_imported_is_what_a_context_trusts(tmp_path):
    """What the entry relies on: SSL_CERT_FILE set in the process after `import ssl`
    is read by every context made later (an empty file: none trusted; certifi's:
    its authorities)."""
    empty = tmp_path / "none.pem"
    empty.write_text("")
    probe = (
        "import os, ssl, sys; os.environ['SSL_CERT_FILE'] = sys.argv[1]; "
        "print(ssl.create_default_context().cert_store_stats()['x509_ca'])"
    )
    counts = [
        int(subprocess.run([sys.executable, "-c", probe, str(path)], env={"PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, check=True, timeout=60).stdout)
        for path in (empty, certifi.where())
    ]  # fmt: skip
    assert counts[0] == 0 and counts[1] > 50
