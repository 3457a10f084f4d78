"""The CLI in scripts and pipes (cron, CI): a confirmation with no terminal to ask at
refuses and says to pass --yes (it raised EOFError); progress lines only on a
terminal; a port in use says so, and who holds it."""

from __future__ import annotations

import io
import socket
import subprocess
import sys

import pytest

from core.cli import main
from core.cli.output import progress_printer
from core.cli.ports import bind_failure
from tests.support.interpreter import REPO
from tests.support.terminal import Terminal, at_a_terminal

CHAT = (
    b"Ann: I met Grace Hopper at the Lisbon office last week.\n"
    b"Bob: Grace moved to Porto in May, she says the food is better.\n"
)


@pytest.fixture
def chat_home(engine, bank, tmp_path):
    """A bank with one document (and its entities), closed for the CLI; its
    home and the document's id."""
    path = tmp_path / "chat.txt"
    path.write_bytes(CHAT)
    bank.ingest(path, mode="rules")
    [document] = bank.documents()
    bank.close()
    return engine.home, document.id


def run(home, *argv: str) -> int:
    return main(["--home", str(home), *argv])


@pytest.mark.parametrize("stdin", [io.StringIO(""), None], ids=["pipe", "closed"])
def test_the_three_confirmations_refuse_without_a_terminal(
    chat_home, engine, capsys, monkeypatch, stdin
):
    home, document = chat_home
    monkeypatch.setattr("sys.stdin", stdin)  # a pipe at its end; closed: sys.stdin is None
    before = engine.open_bank("test").count()
    engine.close()
    for argv in (
        ["documents", "delete", "test", document],
        ["purge", "test", "Lisbon"],
        ["bank", "delete", "test"],
    ):
        assert run(home, *argv) == 1, argv
        err = capsys.readouterr().err
        assert "pass --yes" in err and "no terminal" in err, argv
        assert "EOFError" not in err and "Traceback" not in err
    with type(engine)(home) as again:
        assert again.open_bank("test").count() == before  # nothing went


def test_at_a_terminal_the_confirmation_is_asked(chat_home, capsys, monkeypatch):
    home, document = chat_home
    asked = at_a_terminal(monkeypatch, "n")
    assert run(home, "documents", "delete", "test", document) == 1
    assert asked == ["Delete it? `engram undo` brings it back. [y/N] "]
    assert "nothing deleted" in capsys.readouterr().out
    at_a_terminal(monkeypatch, "test")
    assert run(home, "bank", "delete", "test") == 0
    assert "deleted bank 'test'" in capsys.readouterr().out


def test_yes_needs_no_terminal(chat_home, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", None)
    assert run(chat_home[0], "bank", "delete", "test", "--yes") == 0
    assert "deleted bank 'test'" in capsys.readouterr().out


def test_progress_is_written_on_a_terminal_only(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    step = progress_printer("ingest")
    step(1, 2, "chunk")
    step(2, 2, "chunk")
    assert log.getvalue() == ""  # a log file or a pipe gets no \r rewrites
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    step(1, 2, "chunk")
    step(2, 2, "chunk")
    assert terminal.getvalue().count("\r") == 2 and terminal.getvalue().endswith("\n")


def test_an_ingest_into_a_log_has_no_carriage_returns(engine, bank, tmp_path, capfd):
    path = tmp_path / "chat.txt"
    path.write_bytes(CHAT)
    bank.close()
    assert run(engine.home, "ingest", "test", str(path), "--mode", "rules") == 0
    out, err = capfd.readouterr()
    assert "\r" not in out + err and "chat.txt" in out


def test_a_bind_failure_names_the_port_and_the_holder():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with socket.socket() as second, pytest.raises(OSError) as refused:
            second.bind(("127.0.0.1", port))
        said = bind_failure(refused.value, "127.0.0.1", port)
    assert said.startswith(f"port {port} on 127.0.0.1 is already taken by ")
    assert "--port" in said
    assert bind_failure(FileNotFoundError(2, "gone"), "127.0.0.1", port) is None


@pytest.mark.slow
def test_serve_on_a_taken_port_says_who_holds_it(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time; s=socket.socket(); "
         "s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); "
         "time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = holder.stdout.readline().strip()
        done = subprocess.run(
            [sys.executable, "-m", "app.main", "--home", str(tmp_path), "serve", "--port", port],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1, done.stderr
    assert f"port {port} on 127.0.0.1 is already taken by python" in done.stderr
    assert f"(pid {holder.pid})" in done.stderr
    assert "Traceback" not in done.stderr and "transaction" not in done.stderr
