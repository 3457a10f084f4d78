"""`engram` commands aimed at a bank a live `engram serve` owns go through it.

Two data folders start identical (one copied from the other, same ids). The
commands run directly on the copy, and on the original while a real
`engram serve` subprocess owns its bank: the outputs must be the same (up to
timings and the ids of units made by the commands themselves).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from core import Engine
from core.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"
BANK = "Routed"
TOKEN = "routing-test-token-" + "y" * 20
# What loads or runs the embedding model: a routed command needs none of it.
MODEL_MODULES = ("torch", "sentence_transformers", "onnxruntime", "tokenizers")
ENGRAM = [sys.executable, "-c", "import sys; from app.main import main; sys.exit(main())"]


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def normalised(text: str, new_ids: set[str] = frozenset()) -> str:
    """Timings vary between two runs, and so do the ids of units the run itself made."""
    text = re.sub(r"\d+(\.\d+)? ?m?s\b", "<time>", text)
    for unit_id in new_ids:
        text = text.replace(unit_id, "<new>")
    return text


@pytest.fixture(scope="module")
def homes(tmp_path_factory, embedder):
    """(served home, direct home): the same bank, with the same ids, in both."""
    served = tmp_path_factory.mktemp("served")
    with Engine(served, embedder=embedder) as engine:
        engine.create_bank(BANK).ingest(DEMO / "01-march-kickoff.txt", mode="rules")
    direct = tmp_path_factory.mktemp("direct")
    shutil.copytree(served, direct, dirs_exist_ok=True)
    return served, direct


@pytest.fixture(scope="module")
def server(homes):
    """`engram serve` on a free port, owning the bank (opened by a first request)."""
    env = {**os.environ, "ENGRAM_API_TOKEN": TOKEN, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [*ENGRAM, "--home", str(homes[0]), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        url = None
        for line in process.stdout:
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                url = found.group(0)
                break
        assert url, "engram serve printed no address"
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            assert http.get(f"/engram/v1/banks/{BANK}").status_code == 200
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture
def token_env(monkeypatch):
    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)


def without_progress(err: str) -> list[str]:
    """stderr without progress lines ("label: 3/10 …"): a routed command's work runs
    in the owner, which reports no progress back."""
    lines = re.split(r"[\r\n]+", err)
    return [x.strip() for x in lines if x.strip() and not re.match(r"^[\w ]+: \d+(/\d+)? ", x)]


def both(homes, *args: str, new_ids: set[str] = frozenset()) -> tuple[str, str]:
    served, direct = homes
    code_d, out_d, err_d = run_cli("--home", str(direct), *args)
    code_r, out_r, err_r = run_cli("--home", str(served), *args)
    assert (code_r, without_progress(err_r)) == (code_d, without_progress(err_d))
    return normalised(out_d, new_ids), normalised(out_r, new_ids)


@pytest.mark.slow
def test_the_lock_names_the_server_and_a_direct_open_is_refused(homes, server):
    from core import BankLockedError

    with Engine(homes[0]) as engine, pytest.raises(BankLockedError, match=server):
        engine.open_bank(BANK)


@pytest.mark.slow
def test_recall_and_listing_through_the_owner_print_what_a_direct_run_prints(
    homes, server, token_env
):
    direct, routed = both(homes, "recall", BANK, "Where did Maya move?", "--budget", "300")
    assert "Lisbon" in routed and routed == direct
    direct, routed = both(homes, "memories", "list", BANK, "--limit", "20")
    assert routed.count("\n") > 5 and routed == direct
    direct, routed = both(homes, "recall", BANK, "Maya", "--json", "--trace")
    # The server's link graph is warm ('current'); a direct run builds it ('rebuilt').
    assert differences(json.loads(routed), json.loads(direct)) == [
        ".trace.channels.graph.links.state: 'current' != 'rebuilt'"
    ]


def differences(a, b, path: str = "") -> list[str]:
    """Where two JSON values differ, timings aside (they differ between any two runs)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {"ms", "timings_ms"}
        return [d for k in sorted(keys) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float):
        # Two processes may embed the same query on differently threaded ONNX sessions
        # (or another CPU's kernels): scores then differ in the 7th digit, which is not a
        # routing difference. Order and ids are still compared exactly.
        return [] if math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"[:300]]


@pytest.mark.slow
def test_ingest_and_edit_through_the_owner(homes, server, token_env):
    served, direct = homes
    before = set(_ids(direct))
    args = ("ingest", BANK, str(DEMO / "02-april-planning.txt"), "--mode", "rules", "--quiet")
    code_d, out_d, _ = run_cli("--home", str(direct), *args)
    code_r, out_r, _ = run_cli("--home", str(served), *args)
    assert code_r == code_d == 0 and "documents: 1 ingested" in out_r
    assert normalised(out_r) == normalised(out_d)
    new_ids = (set(_ids(direct)) | set(_ids(served))) - before
    assert new_ids, "the routed ingest wrote nothing"

    unit = sorted(before)[0]
    direct_out, routed_out = both(homes, "edit", BANK, unit, "--text", "Maya lives in Porto now.")
    assert routed_out == direct_out and f"edited {unit}" in routed_out
    direct_out, routed_out = both(
        homes, "memories", "list", BANK, "--text", "Porto", new_ids=new_ids
    )
    assert "Maya lives in Porto now." in routed_out and routed_out == direct_out


def _ids(home: Path | str, *remote: str) -> list[str]:
    """The bank's unit ids, from `home` or, with `--remote URL`, from that server."""
    code, out, _ = run_cli(
        "--home", str(home), *remote, "memories", "list", BANK, "--limit", "100000"
    )
    assert code == 0
    return [line.split()[0] for line in out.splitlines() if not line.startswith("--")]


@pytest.mark.slow
def test_a_routed_recall_as_a_command_loads_no_model(homes, server):
    """The whole `engram recall` as a user runs it; prints the wall time."""
    env = {**os.environ, "ENGRAM_API_TOKEN": TOKEN, "PYTHONPATH": str(REPO)}
    probe = (
        "import sys; sys.argv = ['engram', *sys.argv[1:]]\n"
        "from app.main import main\n"
        "code = main()\n"
        f"heavy = [m for m in {MODEL_MODULES!r} if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(code)\n"
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", probe, "--home", str(homes[0]), "recall", BANK, "Lisbon"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert "Lisbon" in done.stdout and "HEAVY []" in done.stdout
    print(f"routed engram recall: {wall:.2f} s wall")


@pytest.mark.slow
def test_an_engine_error_reads_the_same_routed_as_direct(homes, server, token_env):
    served, direct = homes
    for args in (
        ("edit", BANK, "nosuchunit", "--text", "x"),
        ("merge", BANK, "Nobody", "Maya"),  # resolved in the owner: same refusal
    ):
        d = run_cli("--home", str(direct), *args)
        r = run_cli("--home", str(served), *args)
        assert r == d and r[0] == 1 and r[2].startswith("engram: ")


@pytest.mark.slow
def test_the_call_route_runs_only_bank_methods_and_never_reads_a_named_file(server):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
        call = f"/engram/v1/banks/{BANK}/call"
        assert http.post(f"{call}/close", json={}).status_code == 404
        assert http.post(f"{call}/vectors_for", json={"args": [[]]}).status_code == 404
        # The owner writes an export where it chooses and streams it back: never to a
        # path a client names.
        named = http.post(f"{call}/export_snapshot", json={"args": ["/tmp/x"]})
        assert named.status_code == 422 and "names none" in named.json()["detail"]
        refused = http.post(f"{call}/ingest", json={"args": ["/etc/passwd"]})
        assert refused.status_code == 400 and "Documents" in refused.json()["detail"]
        bad = http.post(f"{call}/count", json={"args": [{"$t": "os:system", "v": "x"}]})
        assert bad.status_code == 422
        assert (
            http.post(f"{call}/count", json={}, headers={"Authorization": "Bearer no"}).status_code
            == 401
        )


@pytest.mark.slow
def test_values_cross_the_wire_as_the_same_types(homes, server, token_env):
    from core import Change, Kind
    from core.server.wire import decode, encode

    with Engine(homes[1]) as engine:
        bank = engine.open_bank(BANK)
        result = bank.recall("Maya", budget_tokens=200)
        units = bank.units(limit=5)
        context = bank.unit_context(result.unit_ids[0])
        around = bank.subgraph(result.unit_ids[:2], hops=1, context=3)
    assert context.turns and around.links
    change = Change.of(added={Kind.UNIT: ["a", "b"]}, removed={Kind.ENTITY: ["c"]})
    values = (result, units, change, context, around, {"k": (1, 2.5, None)}, frozenset({"a"}))
    for value in values:
        assert decode(json.loads(json.dumps(encode(value)))) == value


@pytest.mark.slow
def test_settings_change_through_the_owner_as_they_do_directly(homes, server, token_env):
    for args in (
        ("config", "set", BANK, "recall.entity_fan=false", "recall.rrf_k=42"),
        ("config", "show", BANK, "--changed"),
        ("config", "set", BANK, "recall.rrf_k=42.5"),  # refused the same way, naming the key
        ("config", "reset", BANK),
    ):
        direct, routed = both(homes, *args)
        assert routed == direct, args
    served, _ = homes
    code, _out, err = run_cli("--home", str(served), "config", "set", BANK, "recall.rrf_k=0.5")
    assert code == 1 and "recall.rrf_k" in err


@pytest.mark.slow
def test_remote_runs_commands_on_a_served_bank_as_they_run_here(
    homes, server, token_env, tmp_path, monkeypatch
):
    """`engram --remote URL …` (issue 25, item 6): no data folder of the server's
    here (`--home` is an empty folder), the same output as a direct run."""
    _served, direct = homes
    elsewhere = str(tmp_path / "elsewhere")

    def both_ways(*args: str) -> tuple[tuple, tuple]:
        code_d, out_d, err_d = run_cli("--home", str(direct), *args)
        code_r, out_r, err_r = run_cli("--home", elsewhere, "--remote", server, *args)
        return (code_d, normalised(out_d)), (code_r, normalised(out_r))

    direct_out, remote_out = both_ways("recall", BANK, "Where did Maya move?", "--budget", "300")
    assert remote_out == direct_out and "Lisbon" in remote_out[1]
    # A write, through ENGRAM_REMOTE this time.
    # A unit both banks hold: other tests of this module write to each, in any order.
    unit = sorted(set(_ids(direct)) & set(_ids(elsewhere, "--remote", server)))[1]
    code, out, _ = run_cli("--home", str(direct), "edit", BANK, unit, "--text", "Maya cycles.")
    monkeypatch.setenv("ENGRAM_REMOTE", server)
    code_r, out_r, err_r = run_cli(
        "--home", elsewhere, "edit", BANK, unit, "--text", "Maya cycles."
    )
    assert (code_r, out_r) == (code, out) == (0, out) and f"edited {unit}" in out, err_r
    monkeypatch.delenv("ENGRAM_REMOTE")
    # The export streams the owner's snapshot down.
    target = tmp_path / "copy.engram"
    code, _out, err = run_cli("--remote", server, "export", BANK, str(target), "--quiet")
    assert code == 0 and target.stat().st_size > 0, err
    with Engine(tmp_path / "imported") as engine:
        copy = engine.import_snapshot(target, "copy")
        assert any(u.text == "Maya cycles." for u in copy.units(text="Maya cycles", limit=5))
    assert not (tmp_path / "elsewhere").exists()  # nothing local was opened or made


@pytest.mark.slow
def test_remote_with_a_wrong_token_or_no_server_says_so(server, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_API_TOKEN", "not-the-token-" + "z" * 20)
    code, out, err = run_cli("--remote", server, "documents", "list", BANK)
    assert code == 1 and not out and "Traceback" not in err
    assert f"the server at {server} refused the token in ENGRAM_API_TOKEN" in err, err
    monkeypatch.delenv("ENGRAM_API_TOKEN")
    code, _, err = run_cli("--remote", server, "documents", "list", BANK)
    assert code == 1 and "set ENGRAM_API_TOKEN" in err
    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, _, err = run_cli("--remote", f"http://127.0.0.1:{port}", "documents", "list", BANK)
    assert code == 1 and f"the server at http://127.0.0.1:{port} did not answer" in err, err
    code, _, err = run_cli("--remote", "127.0.0.1:8888", "banks")
    assert code == 1 and "not a server address" in err
