"""Every `engram` command works while another process owns the bank: run
against a bank a real `engram serve` subprocess owns, it goes through the
owner and prints what a direct run prints (issue 25, item 2).

Two data folders start identical (one copied from the other, same ids). Each
step runs directly on the copy, then on the original while the server owns
its bank; exit code, stdout and stderr (progress lines aside: a routed
command's work runs in the owner) must be the same. The steps run in order and
write the same things to both banks, so the two stay alike; what differs
between the two runs is only what a run makes anew (the ids of units and
entities it creates, timings, the temporary paths it names), which
`normalised` replaces by placeholders. One server for the module.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import io
import re
import shutil
from pathlib import Path

import httpx
import pytest

from core import Engine
from core.cli import build_parser
from core.cli import run as cli_run
from tests.support.remote import engram_serve

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"
BANK = "Routed"
OTHER = "Scratch"  # a second bank the engine-level steps create, rename and delete
TOKEN = "routed-commands-token-" + "z" * 20

pytestmark = pytest.mark.slow


@functools.cache
def parser():
    """`engram`'s parser, as `core.cli.main` builds it: once (~60 ms a build)."""
    return build_parser()[0]


def run_cli(*args: str) -> tuple[int, str, str]:
    """`engram ARGS` in this process, as `core.cli.main` runs it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        parsed = parser().parse_args(list(args))
        code = cli_run(parsed, parser())
    return code, out.getvalue(), err.getvalue()


# The first lines of three demo conversations: every command has facts, entities,
# observations and two documents to work on, and each write (a rebuild of the
# observations, a re-ingest) costs what a small bank costs, not the whole demo's.
EXCERPTS = {"01-march-kickoff.txt": 8, "02-april-planning.txt": 6, "04-may-rotterdam.txt": 5}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sources")
    files = {}
    for name, lines in EXCERPTS.items():
        text = (DEMO / name).read_text(encoding="utf-8").splitlines()[:lines]
        files[name] = folder / name
        files[name].write_text("\n".join(text) + "\n", encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def homes(tmp_path_factory, embedder, sources):
    """(served home, direct home): the same bank, with the same ids, in both."""
    served = tmp_path_factory.mktemp("served")
    with Engine(served, embedder=embedder) as engine:
        bank = engine.create_bank(BANK)
        for name in ("01-march-kickoff.txt", "02-april-planning.txt"):
            bank.ingest(sources[name], mode="rules")
        bank.process_jobs()  # its observations, with the same ids in both banks
    direct = tmp_path_factory.mktemp("direct")
    shutil.copytree(served, direct, dirs_exist_ok=True)
    return served, direct


@pytest.fixture(scope="module")
def known(homes) -> frozenset[str]:
    """Every id the two banks share before any step runs (kept as they are)."""
    with Engine(homes[1]) as engine:
        bank = engine.open_bank(BANK)
        ids = {u.id for u in bank.units(status=None, network=None, limit=None)}
        ids |= {e.id for e in bank.entities(include_retracted=True)}
        ids |= {d.id for d in bank.documents()}
        ids.add(bank.id)
    return frozenset(ids)


@pytest.fixture(scope="module")
def server(homes, known):
    """`engram serve` owning the bank (opened by a first routed command)."""
    with (
        pytest.MonkeyPatch.context() as env,
        engram_serve(homes[0], TOKEN) as url,
    ):
        env.setenv("ENGRAM_API_TOKEN", TOKEN)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            assert http.get(f"/engram/v1/banks/{BANK}").status_code == 200
        yield url


HEX_ID = re.compile(r"\b[0-9a-f]{16}\b")


def normalised(text: str, homes: tuple[Path, Path], known: frozenset[str]) -> str:
    """What differs between any two runs: timings, the run's own folder, and the
    ids of what the run itself made (numbered in the order they appear)."""
    for home in homes:
        text = text.replace(str(home), "<home>")
    text = re.sub(r"\d+(\.\d+)? ?m?s\b", "<time>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z)?", "<when>", text)
    fresh: dict[str, str] = {}

    def placeholder(match: re.Match) -> str:
        value = match.group(0)
        if value in known:
            return value
        return fresh.setdefault(value, f"<new{len(fresh)}>")

    return HEX_ID.sub(placeholder, text)


def without_progress(err: str) -> list[str]:
    """stderr without progress lines ("label: 3/10 …")."""
    lines = re.split(r"[\r\n]+", err)
    return [x.strip() for x in lines if x.strip() and not re.match(r"^[\w -]+: \d+(/\d+)? ", x)]


def unordered(seen: tuple) -> tuple:
    """What a run made anew has random ids, and a listing breaks ties between equal
    sort keys (an observation's time, rebuilt) by id: so where such ids appear the
    lines are compared as a multiset, the placeholders alike."""
    code, *texts = seen
    return code, *(sorted(re.sub(r"<new\d+>", "<new>", t).splitlines()) for t in texts)


def settle(homes) -> None:
    """Run the observation rebuilds a step queued, on both sides. The server runs
    them itself after a write (core/server/rebuilds.py), whatever `--no-jobs` the
    command was given, and a direct run leaves them: each side's next step must
    start from the same bank. A routed `jobs run` waits for the owner's own rebuild
    (both hold the bank's write lock), so once it returns nothing is pending."""
    for home in homes:
        code, _out, err = run_cli("--home", str(home), "jobs", "run", BANK, "--rules", "--quiet")
        assert code == 0, err


# Each step: an id, and its arguments; `{unit}` is a fact of the ingested demo
# (the same id in both banks), `{path}` a file of the step's own in each home.
# In order: later steps see what earlier ones wrote, in both banks alike.
STEPS: list[tuple[str, tuple[str, ...]]] = [
    ("banks", ("banks",)),
    ("banks-json", ("banks", "--json")),
    ("memories-list", ("memories", "list", BANK, "--limit", "30")),
    ("memories-list-json", ("memories", "list", BANK, "--limit", "5", "--json")),
    ("memories-list-filtered", ("memories", "list", BANK, "--network", "world", "--text", "a")),
    ("memories-list-entity", ("memories", "list", BANK, "--entity", "Maya")),
    ("entities", ("entities", BANK)),
    ("entities-json", ("entities", BANK, "--json", "--limit", "5")),
    ("entities-search", ("entities", BANK, "--search", "ma")),
    ("entities-hints", ("entities", BANK, "--hints")),
    ("documents-list", ("documents", "list", BANK)),
    ("documents-list-json", ("documents", "list", BANK, "--json")),
    ("documents-show", ("documents", "show", BANK, "{document}")),
    ("documents-show-json", ("documents", "show", BANK, "{document}", "--json")),
    ("recall", ("recall", BANK, "Where did Maya move?", "--budget", "300")),
    ("opinions", ("opinions", BANK)),
    ("reflections", ("reflections", BANK)),
    ("audit-empty", ("audit", BANK)),
    ("config-keys", ("config", "keys")),
    ("config-show", ("config", "show", BANK)),
    ("config-set", ("config", "set", BANK, "recall.rrf_k=42")),
    ("config-show-changed", ("config", "show", BANK, "--changed")),
    ("config-reset", ("config", "reset", BANK)),
    ("verify", ("verify", BANK)),
    ("verify-json", ("verify", BANK, "--json")),
    ("jobs-list", ("jobs", "list", BANK)),
    ("snapshots-none", ("snapshots", BANK)),
    ("memories-add", ("memories", "add", BANK, "Maya adopted a cat named Pixel.", "--no-jobs")),
    (
        "memories-add-opinion",
        (
            "memories",
            "add",
            BANK,
            "Lisbon is lovely.",
            "--network",
            "opinion",
            "--confidence",
            "0.7",
            "--entity",
            "Maya",
            "--no-jobs",
        ),
    ),
    ("edit", ("edit", BANK, "{unit}", "--text", "Maya lives in Porto now.", "--no-jobs")),
    ("edit-unknown-entity", ("edit", BANK, "{unit}", "--entity", "Nobody At All")),
    ("hide", ("hide", BANK, "{unit}", "--no-jobs")),
    ("memories-list-hidden", ("memories", "list", BANK, "--status", "hidden")),
    ("unhide", ("unhide", BANK, "{unit}", "--no-jobs")),
    ("undo", ("undo", BANK, "--no-jobs")),
    ("redo", ("redo", BANK, "--no-jobs")),
    ("rename-entity", ("rename-entity", BANK, "Maya", "Maya Okafor", "--no-jobs")),
    ("split", ("split", BANK, "Maya Okafor", "Maya Two", "--unit", "{unit}", "--no-jobs")),
    ("merge", ("merge", BANK, "Maya Two", "Maya Okafor", "--no-jobs")),
    ("retract-preview", ("retract", BANK, "{entity}", "--preview")),
    ("retract-preview-json", ("retract", BANK, "{entity}", "--preview", "--json")),
    ("retract", ("retract", BANK, "{entity}", "--no-jobs")),
    ("memories-list-retracted", ("memories", "list", BANK, "--status", "retracted")),
    ("restore", ("restore", BANK, "{entity}", "--no-jobs")),
    ("jobs-list-queued", ("jobs", "list", BANK)),
    ("purge", ("purge", BANK, "{purged}", "--yes", "--no-jobs")),
    ("jobs-run", ("jobs", "run", BANK, "--rules", "--quiet")),
    ("delete", ("delete", BANK, "{other_unit}", "--no-jobs")),
    ("documents-delete-preview", ("documents", "delete", BANK, "{document}", "--preview")),
    ("documents-delete", ("documents", "delete", BANK, "{document}", "--yes", "--no-jobs")),
    ("ingest", ("ingest", BANK, "{fresh}", "--mode", "rules", "--quiet")),
    ("documents-reingest", ("documents", "reingest", BANK, "{kept_document}", "--mode", "rules")),
    ("audit", ("audit", BANK)),
    ("audit-json", ("audit", BANK, "--json")),
    ("repair", ("repair", BANK)),
    ("export", ("export", BANK, "{path}", "--quiet")),
    ("snapshots", ("snapshots", BANK)),
    ("diff-snapshot-bank", ("diff", "{path}", BANK)),
    ("import-replace", ("import", "{path}", "--replace", "--yes", "--quiet")),
    ("memories-list-after-import", ("memories", "list", BANK, "--limit", "1000")),
    ("activity-recall", ("activity", BANK, "--kind", "recall", "--limit", "3")),
    ("bank-create", ("bank", "create", OTHER)),
    ("bank-rename", ("bank", "rename", OTHER, OTHER + "2")),
    ("bank-delete", ("bank", "delete", OTHER + "2", "--yes")),
    ("bad-unit", ("edit", BANK, "nosuchunit", "--text", "x")),
    ("bad-entity", ("merge", BANK, "Nobody", "Maya Okafor")),
]


def fill(args: tuple[str, ...], home: Path, picks: dict[str, str]) -> list[str]:
    path = str(home / "routed.engram")
    return [a.replace("{path}", path).format(**picks) if "{" in a else a for a in args]


@pytest.fixture(scope="module")
def picks(homes, known, sources) -> dict[str, str]:
    """Facts, entities and a document named by id, the same in both banks."""
    with Engine(homes[1]) as engine:
        bank = engine.open_bank(BANK)
        maya = bank.resolve_entity("Maya")
        # Facts, not observations: a rebuild would bring an edited or hidden one back.
        mentioning = bank.units("world", entity=maya, limit=None)
        entities = sorted(bank.entities(), key=lambda e: (-e.mention_count, e.id))
        others = [u for u in bank.units("world", limit=None) if u not in mentioning]
        documents = sorted(bank.documents(), key=lambda d: d.id)
    return {
        "unit": mentioning[0].id,
        "other_unit": others[-1].id,
        "entity": entities[1].id,
        "purged": entities[-1].id,
        "document": documents[0].id,
        "kept_document": documents[1].id,
        "fresh": str(sources["04-may-rotterdam.txt"]),
    }


# Steps that write nothing a rebuild follows (reads, previews, refusals): no
# settling after them. A write wrongly listed here leaves the direct bank's rebuild
# pending while the owner has run its own, and a later listing tells them apart.
READS = {
    "banks",
    "banks-json",
    "memories-list",
    "memories-list-json",
    "memories-list-filtered",
    "memories-list-entity",
    "entities",
    "entities-json",
    "entities-search",
    "entities-hints",
    "documents-list",
    "documents-list-json",
    "documents-show",
    "documents-show-json",
    "recall",
    "opinions",
    "reflections",
    "audit-empty",
    "config-keys",
    "config-show",
    "config-show-changed",
    "verify",
    "verify-json",
    "jobs-list",
    "snapshots-none",
    "edit-unknown-entity",
    "memories-list-hidden",
    "retract-preview",
    "retract-preview-json",
    "memories-list-retracted",
    "jobs-list-queued",
    "documents-delete-preview",
    "audit",
    "audit-json",
    "snapshots",
    "diff-snapshot-bank",
    "memories-list-after-import",
    "activity-recall",
    "bad-unit",
    "bad-entity",
}

# Steps that print nothing when they work (--quiet).
QUIET = {"import-replace"}

# Steps that are refused (the same way both times): everything else exits 0.
REFUSED = {"edit-unknown-entity", "bad-unit", "bad-entity"}


def test_every_routed_command_prints_what_a_direct_run_prints(
    homes, known, picks, server, monkeypatch
):
    """The steps in order, in one test: each sees what the ones before it wrote, so
    they cannot be split among xdist's workers or picked out with -k."""
    from core.server.owner import find_owner

    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)
    served = homes[0]
    for step, args in STEPS:
        owner = find_owner(served, BANK)
        assert owner is not None and owner.url == server, f"{step}: the server lost the bank"
        check_step(step, args, homes, known, picks)


def check_step(step, args, homes, known, picks) -> None:
    """One step run directly, then routed: the same exit code and output."""
    served, direct = homes
    code_d, out_d, err_d = run_cli("--home", str(direct), *fill(args, direct, picks))
    code_r, out_r, err_r = run_cli("--home", str(served), *fill(args, served, picks))

    def seen(code, out, err):
        quiet = "\n".join(without_progress(err))
        return code, normalised(out, homes, known), normalised(quiet, homes, known)

    routed, direct_seen = seen(code_r, out_r, err_r), seen(code_d, out_d, err_d)
    if any("<new" in part for part in (*routed[1:], *direct_seen[1:])):
        routed, direct_seen = unordered(routed), unordered(direct_seen)
    assert routed == direct_seen, f"step {step}:\n" + "\n".join(
        difflib.unified_diff(
            "\n".join(map(str, direct_seen)).splitlines(),
            "\n".join(map(str, routed)).splitlines(),
            "direct",
            "routed",
            lineterm="",
        )
    )
    assert (code_r != 0) == (step in REFUSED), f"step {step}: {err_r}"
    if step not in READS:
        settle(homes)
    assert out_r or err_r.strip() or step in QUIET, f"step {step}: the command said nothing"
    assert "cannot go through" not in err_r and "another process" not in err_r, err_r
