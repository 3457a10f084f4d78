"""Where the studio's files are: `resources/` in a source checkout, `app/_resources`
inside an installed wheel or a desktop bundle (setup.py copies them there)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1] / "resources"


def resource_path(*parts: str) -> Path:
    """The file or folder `resources/<parts>`, wherever this copy of the app keeps it."""
    packaged = Path(str(files("app"))) / "_resources" / Path(*parts)
    return packaged if packaged.exists() else CHECKOUT / Path(*parts)


def app_icon_path() -> Path:
    return resource_path("icons", "engram-studio-256.png")
