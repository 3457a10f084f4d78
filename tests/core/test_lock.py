"""The bank lock: who owns a bank, how to reach it, and no reliance on fcntl."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from core import BankLockedError
from core.store.lock import BankLock, is_free, live_owner, read_record

# Runs with `fcntl` unavailable, as on Windows: `import core` must work and the
# lock must still exclude. Each line on stdin is "hold" or "try"; it answers.
WITHOUT_FCNTL = textwrap.dedent(
    """
    import sys, warnings
    sys.modules["fcntl"] = None
    warnings.simplefilter("ignore")
    from pathlib import Path
    import core
    from core.store.lock import BankLock
    import filelock
    print("lock", filelock.FileLock.__name__, flush=True)
    folder = Path(sys.argv[1])
    for line in sys.stdin:
        lock = BankLock(folder, "b")
        try:
            lock.acquire()
        except core.BankLockedError as error:
            print("refused", error, flush=True)
            continue
        print("acquired", flush=True)
        if line.strip() == "try":
            lock.release()
    """
)


def _without_fcntl(folder):
    child = subprocess.Popen(
        [sys.executable, "-c", WITHOUT_FCNTL, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().split() == ["lock", "SoftFileLock"]
    return child


def _ask(child, command: str) -> str:
    child.stdin.write(command + "\n")
    child.stdin.flush()
    return child.stdout.readline().strip()


def test_without_fcntl_core_imports_and_the_lock_excludes_and_survives_sigkill(tmp_path):
    holder = _without_fcntl(tmp_path)
    contender = _without_fcntl(tmp_path)
    try:
        assert _ask(holder, "hold") == "acquired"
        answer = _ask(contender, "try")
        assert answer.startswith("refused") and f"PID {holder.pid}" in answer
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        # The dead owner's marker is stale: the next opener takes the bank.
        assert _ask(contender, "try") == "acquired"
    finally:
        for child in (holder, contender):
            if child.poll() is None:
                child.kill()
            child.wait()


def test_a_second_opener_is_refused_with_the_owner_and_its_address(tmp_path):
    owner = BankLock(tmp_path, "b")
    owner.acquire()
    try:
        owner.advertise("http://127.0.0.1:8888", tmp_path / "api-token")
        with pytest.raises(BankLockedError, match=r"PID \d+.*serves it at http://127.0.0.1:8888"):
            BankLock(tmp_path, "b").acquire()
        record = live_owner(tmp_path)
        assert record["url"] == "http://127.0.0.1:8888"
        assert record["token_file"] == str(tmp_path / "api-token")
        assert record["pid"] == os.getpid()
        owner.advertise(None)  # stops serving: still owned, nothing to route to
        assert live_owner(tmp_path) is None
        assert not is_free(tmp_path)
    finally:
        owner.release()
    assert is_free(tmp_path) and read_record(tmp_path) == {}


def test_a_dead_owners_address_is_not_routed_to(tmp_path):
    owner = BankLock(tmp_path, "b")
    owner.acquire()
    owner.advertise("http://127.0.0.1:1", tmp_path / "api-token")
    record = (tmp_path / "bank.lock").read_text()
    owner.release()
    (tmp_path / "bank.lock").write_text(record)  # what a SIGKILLed server leaves behind
    assert live_owner(tmp_path) is None


def test_only_the_owner_advertises(tmp_path):
    with pytest.raises(RuntimeError):
        BankLock(tmp_path, "b").advertise("http://127.0.0.1:8888")
