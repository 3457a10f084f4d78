"""The public-index dry run starts when collection ends (tests/packaging/public_index.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.packaging import public_index

DRY_RUN_TEST = "test_installing_from_the_public_index_pulls_no_gpu_stack"


def dry_run_folder(config: pytest.Config) -> Path:
    """The run's folder for it, shared by xdist's workers (as the demo subset's)."""
    run = config._tmp_path_factory.getbasetemp()
    return (run.parent if hasattr(config, "workerinput") else run) / "public-index"


def pytest_collection_finish(session: pytest.Session) -> None:
    # Not for --collect-only: no test would read it (and each such run would start one).
    if session.config.option.collectonly:
        return
    if any(item.name == DRY_RUN_TEST for item in session.items):
        from tests.packaging.test_install import wheel_requirements

        public_index.start(dry_run_folder(session.config), wheel_requirements())


@pytest.fixture
def public_index_dry_run(request: pytest.FixtureRequest) -> public_index.DryRun:
    """What the dry run found (it ran while the rest of the suite did)."""
    return public_index.result(dry_run_folder(request.config))
