"""TLS between the studio and a server: `engram serve --certfile/--keyfile`
(uvicorn's own TLS) with a self-signed certificate made here; the client always
verifies it — against the CA file given in the connect dialog, never by
skipping the check — and a non-loopback bind still needs a token.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import httpx
import pytest
import shiboken6

from core import RemoteEngine, RemoteError
from core.cli import main as cli_main
from tests.app.conftest import wait_idle
from tests.support.remote import engram_serve, self_signed

TOKEN = "remote-tls-token-" + "q" * 24
LONG = 60_000


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def served_home(tmp_path_factory, demo_subset_home):
    home = tmp_path_factory.mktemp("served-tls")
    shutil.copytree(demo_subset_home, home, dirs_exist_ok=True)
    return home


@pytest.fixture(scope="module")
def server(served_home, certificate):
    certfile, keyfile = certificate
    extra = ("--certfile", str(certfile), "--keyfile", str(keyfile))
    with engram_serve(served_home, TOKEN, *extra) as url:
        yield url


def run_cli(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(list(args))
    return code, err.getvalue()


@pytest.mark.slow
def test_the_server_speaks_https_and_the_client_verifies_its_certificate(server, certificate):
    assert server.startswith("https://127.0.0.1:")
    # Without the CA that signed it, the certificate is refused, and the message says
    # what to do: verification is never skipped.
    with RemoteEngine(server, TOKEN, timeout=30) as engine, pytest.raises(RemoteError) as refused:
        engine.banks()
    assert refused.value.kind == "Certificate"
    assert "could not be verified" in str(refused.value) and "CA file" in str(refused.value)
    # With it: the banks, a call, and the change stream, all over TLS.
    with RemoteEngine(server, TOKEN, timeout=30, ca_file=certificate[0]) as engine:
        assert [b.name for b in engine.banks()] == ["Demo"]
        bank = engine.open_bank("Demo")
        assert bank.count() > 0
        follower = bank.changes()
        assert not next(follower).reset
        bank.stop_following()
    # Plain HTTP to the TLS port gets no answer from the API.
    plain = server.replace("https://", "http://")
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{plain}/health", timeout=10)


@pytest.mark.slow
def test_the_studio_connects_with_the_ca_file_and_never_without(
    qtbot, make_window, server, certificate, monkeypatch
):
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        window = make_window()
        dialog = window.ask_connect()
        dialog.url.setText(server)
        dialog.token.setText(TOKEN)
        dialog.connect_button.click()
        qtbot.waitUntil(lambda: "could not be verified" in dialog.problem.text(), timeout=LONG)
        assert dialog.isVisible() and server not in window.state.remotes.servers

        dialog.ca_file.setText(str(certificate[0]))
        dialog.connect_button.click()
        qtbot.waitUntil(lambda: not shiboken6.isValid(dialog), timeout=LONG)
        qtbot.waitUntil(lambda: window.state.remotes.servers[server].listed, timeout=LONG)
        remote = window.state.remotes.servers[server]
        assert remote.connection.ca_file == str(certificate[0])
        window.bank_list._activated(window.bank_list.item_for(server, remote.banks[0].id))
        qtbot.waitUntil(lambda: window.state.remote, timeout=LONG)
        qtbot.waitUntil(lambda: window.follower.status == "live", timeout=LONG)
        world = window.show_pane("world")
        qtbot.waitUntil(lambda: world.model.counted and world.model.rowCount() > 0, timeout=LONG)
        wait_idle(qtbot, window.runner, LONG)
    finally:
        keyring.set_keyring(before)


@pytest.mark.slow
def test_a_command_on_this_machine_reaches_the_tls_owner_trusting_its_certificate(
    server, served_home, certificate, monkeypatch
):
    """The owner's lock names its certificate: a routed command (a nightly export)
    trusts exactly that one, though no authority signed it."""
    with RemoteEngine(server, TOKEN, timeout=30, ca_file=certificate[0]) as engine:
        first = engine.open_bank("Demo").units(limit=3)  # served from now on (opened on demand)
    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(
            ["--home", str(served_home), "memories", "list", "Demo", "--limit", "3", "--json"]
        )
    assert code == 0, err.getvalue()
    assert [u["id"] for u in json.loads(out.getvalue())] == [u.id for u in first]


def test_a_bind_beyond_loopback_needs_a_token_with_tls_too(tmp_path, certificate, monkeypatch):
    monkeypatch.delenv("ENGRAM_API_TOKEN", raising=False)
    certfile, keyfile = certificate
    code, err = run_cli(
        "--home", str(tmp_path), "serve", "--host", "0.0.0.0",
        "--certfile", str(certfile), "--keyfile", str(keyfile),
    )  # fmt: skip
    assert code != 0 and "ENGRAM_API_TOKEN" in err


def test_an_unusable_certificate_is_refused_before_serving(tmp_path, certificate):
    code, err = run_cli("--home", str(tmp_path), "serve", "--certfile", str(tmp_path / "none"))
    assert code != 0 and "does not exist" in err
    code, err = run_cli(
        "--home", str(tmp_path), "serve", "--certfile", str(certificate[1]),  # a key, not a cert
    )  # fmt: skip
    assert code != 0 and "cannot be used" in err
    code, err = run_cli("--home", str(tmp_path), "serve", "--keyfile", str(certificate[1]))
    assert code != 0 and "--keyfile needs --certfile" in err
