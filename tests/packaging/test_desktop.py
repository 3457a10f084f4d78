"""install-desktop.sh registers a launcher that opens the studio from the menu and
offers a .engram file for import, also from a folder with a space in its name."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from app.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def _install(tmp_path, bin_path: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ENGRAM_BIN": bin_path}
    env["XDG_DATA_HOME"] = str(tmp_path / "share")
    return subprocess.run(
        ["sh", str(REPO / "packaging" / "install-desktop.sh")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.slow  # update-mime-database and update-desktop-database run when installed
def test_the_installed_launcher_opens_the_studio_and_offers_files(tmp_path):
    engram = "/opt/My Apps/engram/engram"
    done = _install(tmp_path, engram)
    assert done.returncode == 0, done.stderr
    share = tmp_path / "share"
    entry = (share / "applications" / "engram-studio.desktop").read_text("utf-8")
    fields = dict(line.split("=", 1) for line in entry.splitlines() if "=" in line)
    assert fields["TryExec"] == engram and fields["MimeType"] == "application/x-engram-snapshot;"
    # The spec's quoting is the shell's for these characters.
    command = shlex.split(fields["Exec"])
    assert command[0] == engram
    from_menu = [w for w in command[1:] if w != "%f"]  # no file: %f is dropped
    args = build_parser().parse_args(from_menu)
    assert args.command is None and args.open is None
    opened = build_parser().parse_args([w.replace("%f", "/x/a b.engram") for w in command[1:]])
    assert opened.command is None and opened.open == "/x/a b.engram"
    assert (share / "mime" / "packages" / "engram-studio.xml").is_file()
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / "engram-studio.png").is_file()


def test_a_path_the_launcher_cannot_quote_is_refused(tmp_path):
    done = _install(tmp_path, "/opt/a&b$c/engram")
    assert done.returncode == 1 and "cannot write a launcher" in done.stderr
    assert not (tmp_path / "share" / "applications" / "engram-studio.desktop").exists()
