"""The OpenAPI document, as checked in at docs/openapi.json.

`python -m core.server.openapi > docs/openapi.json` regenerates it; a test
checks that the file equals what the server serves.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def openapi_document() -> dict[str, Any]:
    from core.server.app import create_app
    from core.server.served import ServedBanks

    # Building the document touches no bank: the served banks are never asked.
    app = create_app(ServedBanks(None, open_on_demand=False), "unused", mcp=False)  # type: ignore[arg-type]
    return app.openapi()


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(openapi_document()))
