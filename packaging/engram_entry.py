"""Entry script of the desktop bundle: the same `engram` as the installed command."""

import os
import sys

# Where distributions keep their certificate authorities as one PEM file.
SYSTEM_CA_FILES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Arch, Gentoo
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL, CentOS
    "/etc/ssl/ca-bundle.pem",  # openSUSE
    "/etc/ssl/cert.pem",  # Alpine, macOS
)


def ca_file_to_trust(
    environ, found_defaults: bool, platform: str, exists, certifi_file
) -> str | None:
    """The file SSL_CERT_FILE should name, or None to leave OpenSSL as it is.

    The bundle carries the build machine's OpenSSL, which looks for certificate
    authorities where that distribution keeps them (/usr/lib/ssl on Debian): on
    another one it finds none, and the studio's https connection to a server with a
    public certificate fails to verify. So where OpenSSL's own places are missing
    here, and the user set neither SSL_CERT_FILE nor SSL_CERT_DIR, trust this
    system's file, else certifi's (the bundle carries it). Windows reads its own
    store (ssl's load_default_certs), whatever OpenSSL's places."""
    if platform == "win32" or environ.get("SSL_CERT_FILE") or environ.get("SSL_CERT_DIR"):
        return None
    if found_defaults:
        return None
    return next((path for path in SYSTEM_CA_FILES if exists(path)), None) or certifi_file()


def trust_this_systems_authorities() -> None:
    import ssl

    def certifi_file() -> str | None:
        try:
            import certifi
        except ImportError:
            return None
        return certifi.where()

    paths = ssl.get_default_verify_paths()  # cafile/capath: None where missing here
    chosen = ca_file_to_trust(
        os.environ, bool(paths.cafile or paths.capath), sys.platform, os.path.isfile, certifi_file
    )
    if chosen:
        os.environ["SSL_CERT_FILE"] = chosen  # read by each ssl context made after this


if __name__ == "__main__":
    trust_this_systems_authorities()
    from app.main import main

    sys.exit(main())
