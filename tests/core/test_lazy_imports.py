"""core's public face loads names on first use; the engine alone loads no store."""

from __future__ import annotations

import importlib

import core
from tests.support.interpreter import run_python


def test_every_public_name_resolves_to_its_module():
    for name in core.__all__:
        value = getattr(core, name)
        module, _, attribute = core._EXPORTS[name].partition(":")
        assert value is getattr(importlib.import_module(module), attribute or name)
    assert set(core.__all__) <= set(dir(core))


def test_an_unknown_name_is_an_attribute_error():
    try:
        core.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("core.NoSuchThing resolved")


def test_engine_lists_banks_without_loading_stores(tmp_path):
    from core import Engine

    with Engine(tmp_path) as engine:
        engine.create_bank("one").close()
    code = (
        "import sys; from core import Engine; "
        f"names = [b.name for b in Engine({str(tmp_path)!r}).banks()]; "
        "print(names, [m for m in ('duckdb', 'lancedb', 'pyarrow', 'onnxruntime') if m in sys.modules])"
    )
    done = run_python(["-c", code])
    assert done.stdout.strip() == "['one'] []", done.stderr


def test_engine_spots_import_leftovers_by_the_importers_names():
    # The engine checks for them without importing the importer (DuckDB, Arrow).
    from core.snapshot import importer

    assert (importer.IMPORT_PREFIX, importer.IMPORT_LOCK, importer.REPLACED_PREFIX) == (
        ".import-",
        "import.lock",
        ".replaced-",
    )
