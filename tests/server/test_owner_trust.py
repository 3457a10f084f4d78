"""What a bank's lock record may make the CLI do (issue 27, items 12 and 13).

The record is a file in the data folder: whoever can write it could point the
CLI's bearer token at their own server, or make it read any file as a token.
The CLI goes only to loopback (or the remote its user configured) and reads
the token only from ENGRAM_API_TOKEN or the data folder's own token file. And
an owner started with ENGRAM_API_TOKEN, met from a terminal without it, is a
one-line explanation, not a PermissionError traceback.
"""

from __future__ import annotations

import pytest

from core import Engine, EngramError
from core.cli import main
from core.server.owner import REMOTE_ENV, find_owner
from core.server.token import ENV, api_token
from tests.support.embedders import HashEmbedder


@pytest.fixture
def held(tmp_path, monkeypatch):
    """A bank this process holds (as a serving owner would), and its data folder."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(REMOTE_ENV, raising=False)
    home = tmp_path / "home"
    with Engine(home, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("mine")
        yield home, bank


@pytest.mark.parametrize(
    "url", ["http://attacker.example:8888", "http://10.0.0.7:8888", "file:///etc/passwd"]
)
def test_the_token_goes_only_to_loopback(held, url, monkeypatch):
    home, bank = held
    bank.advertise(url, str(home / "api-token"))
    with pytest.raises(EngramError, match="only to loopback"):
        find_owner(home, "mine")
    # The remote its user chose is allowed, and only that one.
    monkeypatch.setenv(REMOTE_ENV, url)
    assert find_owner(home, "mine").url == url


def test_the_token_is_read_only_from_the_data_folder(held, tmp_path):
    home, bank = held
    decoy = tmp_path / "elsewhere.txt"
    decoy.write_text("the content of some other file\n")
    expected = api_token(home)  # the server made the data folder's token
    bank.advertise("http://127.0.0.1:9", str(decoy))  # the record names another file
    assert find_owner(home, "mine").token() == expected


def test_an_owner_started_with_the_variable_says_what_to_do(held, capsys):
    home, bank = held
    bank.advertise("http://127.0.0.1:9", None)  # `ENGRAM_API_TOKEN=... engram serve`
    with pytest.raises(EngramError, match=f"set {ENV} to the same value"):
        find_owner(home, "mine").token()
    code = main(["--home", str(home), "recall", "mine", "what is there"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("engram: ") and ENV in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
