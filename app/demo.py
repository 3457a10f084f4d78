"""The demo bank, "Demo: Juniper", built from `resources/demo/` in offline rules mode.

The conversation files are those named `NN-*` (resources/demo/README.md);
`bank.json` gives the bank's name, agent, background and disposition. The
build runs as one job in the runner with progress per file; a cancelled or
failed build deletes the half-built bank so the next start tries again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.assets import resource_path
from app.state import Building
from core import Change, Disposition, Kind

if TYPE_CHECKING:
    from app.window import MainWindow
    from core import Bank, CancelToken, Engine, IngestReport

DEMO_NAME = "Demo: Juniper"


def demo_dir() -> Path:
    """ENGRAM_DEMO_DIR, else resources/demo (a checkout) or the copy in the wheel/bundle."""
    env = os.environ.get("ENGRAM_DEMO_DIR")
    return Path(env) if env else resource_path("demo")


def demo_files(folder: Path | None = None) -> list[Path]:
    folder = folder or demo_dir()
    return sorted(p for p in folder.glob("[0-9][0-9]-*") if p.is_file())


def demo_available() -> bool:
    return bool(demo_files())


@dataclass
class DemoBuild:
    bank: Bank
    reports: list[IngestReport] = field(default_factory=list)
    change: Change = field(default_factory=Change)


def build_demo_bank(
    engine: Engine,
    progress: Callable[[int, int, str], None] | None = None,
    cancel: CancelToken | None = None,
    folder: Path | None = None,
) -> DemoBuild:
    folder = folder or demo_dir()
    files = demo_files(folder)
    label = json.loads((folder / "bank.json").read_text("utf-8"))
    name = label.get("name", DEMO_NAME)
    bank = engine.create_bank(
        name, background=label.get("background", ""), agent_name=label.get("agent_name", "")
    )
    result = DemoBuild(bank, change=Change.of(added={Kind.BANK: [bank.id]}))
    try:
        if "disposition" in label:
            bank.set_profile(disposition=Disposition.from_dict(label["disposition"]))
        steps = 1000
        phases = len(files) + 1  # each file, then the observations

        def reporter(phase: int, label: str) -> Callable[..., None]:
            def step(done: int, total: int, message: str = "") -> None:
                if progress is not None:
                    fraction = done / total if total else 0.0
                    progress(int((phase + fraction) * steps), phases * steps, f"{label}: {message}")

            return step

        for i, path in enumerate(files):
            report = bank.ingest(
                path,
                format="auto",
                mode="rules",
                progress=reporter(i, path.name),
                cancel=cancel,
            )
            result.reports.append(report)
            result.change = result.change | report.change
        jobs = bank.process_jobs(progress=reporter(len(files), "observations"), cancel=cancel)
        result.change = result.change | jobs.change
    except BaseException:
        # Half a demo is worse than none: the next start builds it again.
        engine.delete_bank(name)
        raise
    return result


def start_demo_build(window: MainWindow) -> None:
    """Build the demo bank in the window's runner and open it when done."""
    if not demo_available():
        window.statusBar().showMessage(
            "The demo bank needs the conversations in resources/demo/.", 8000
        )
        return
    engine = window.engine
    state = window.state

    def done(build: DemoBuild) -> None:
        window.set_bank(build.bank)
        window.statusBar().showMessage(f"Built the demo bank “{build.bank.name}”.", 8000)

    job = window.runner.run_job(
        f"Building the demo bank “{DEMO_NAME}”",
        lambda progress, cancel: build_demo_bank(engine, progress, cancel),
        done,
    )
    # Until it is built, every empty state says so, with its progress (not "no banks").
    state.set_building(Building(DEMO_NAME))
    job.progressed.connect(
        lambda done_, total, message: state.set_building(
            Building(DEMO_NAME, done_, total, message)
        )
    )
    job.finished.connect(lambda _completed: state.set_building(None))
