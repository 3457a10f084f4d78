"""Engine errors as HTTP answers, and the 422 for a field Engram cannot honour.

No answer shows a path of the server's filesystem (`public`): the data folder
is "the data folder" and any other absolute path is "<path>".
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from core import (
    ActivityNotFoundError,
    LanguageModelError,
    PurgedInSnapshotError,
    ReflectionError,
    SnapshotError,
    stopped_by_disk,
)
from core.limits import FieldError
from core.server.guard import current_departure
from core.types import (
    BankExistsError,
    BankLockedError,
    BankNotFoundError,
    CancelledError,
    EmbeddingMismatchError,
    EngramError,
    InvalidInputError,
    StorageError,
)

log = logging.getLogger(__name__)


class RetainFailed(EngramError):
    """No part of a document could be extracted: nothing of it was written (502)."""


# Most specific first: the first class an error is an instance of decides.
STATUS: list[tuple[type[Exception], int]] = [
    (BankNotFoundError, 404),
    (ActivityNotFoundError, 404),
    (BankExistsError, 409),
    (BankLockedError, 409),
    (EmbeddingMismatchError, 409),
    (InvalidInputError, 422),
    (PurgedInSnapshotError, 409),
    (SnapshotError, 422),
    (StorageError, 507),
    (RetainFailed, 502),
    (ReflectionError, 502),
    (LanguageModelError, 502),
    (EngramError, 400),
]


def status_of(error: Exception) -> int:
    for kind, status in STATUS:
        if isinstance(error, kind):
            return status
    return 500


# An absolute path: POSIX under the usual roots, or a Windows drive.
_PATH = re.compile(
    r"(?:(?<![\w.])/(?:home|Users|root|tmp|var|private|mnt|opt|srv|media|run|usr|etc|work)"
    r"(?:/[^\s'\"`,;)]*)?)|(?:\b[A-Za-z]:\\[^\s'\"`,;)]*)"
)


# A refusal names what it refused, never all of it: a megabyte of strategy or
# setting name quoted back would make the answer as large as the request.
_LONG_WORD = re.compile(r"\S{121,}")
DETAIL_CHARS = 2_000


def brief(text: str) -> str:
    """`text` with any run of over 120 characters without a space cut to its
    start, and at most DETAIL_CHARS long."""
    text = _LONG_WORD.sub(lambda m: f"{m.group()[:60]}… ({len(m.group()):,} characters)", text)
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


def brief_detail(detail: Any) -> Any:
    """An answer's `detail` (text, or FastAPI's list of objects) with its texts brief."""
    if isinstance(detail, str):
        return brief(detail)
    if isinstance(detail, list):
        return [brief_detail(d) for d in detail]
    if isinstance(detail, dict):
        return {k: brief_detail(v) for k, v in detail.items()}
    return detail


def public(text: str, home: Path | None = None) -> str:
    """`text` without the server's paths (the data folder is named as such, any
    other absolute path is `<path>`), and brief."""
    for root, name in _roots(home):
        text = text.replace(root, name)
    return brief(_PATH.sub("<path>", text))


def _roots(home: Path | None) -> list[tuple[str, str]]:
    roots = []
    if home is not None:
        for form in {str(home), str(Path(home).resolve())}:
            roots += [(f"{form}/banks", "the data folder's banks"), (form, "the data folder")]
    roots += [(str(Path.home()), "~"), (tempfile.gettempdir(), "<temp>")]
    # Longest first, so a folder inside another is named by its own name.
    return sorted(roots, key=lambda pair: -len(pair[0]))


def _home_of(request: Request) -> Path | None:
    served = getattr(request.app.state, "served", None)
    return getattr(getattr(served, "engine", None), "home", None)


async def engram_error(request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, FieldError):
        return JSONResponse({"detail": field_detail(error)}, status_code=422)
    if isinstance(error, CancelledError):
        return JSONResponse({"detail": stopped_why()}, status_code=504)
    return JSONResponse(
        {"detail": public(str(error), _home_of(request))}, status_code=status_of(error)
    )


async def disk_error(request: Request, error: Exception) -> JSONResponse:
    """The disk (or the store) failed under a request: an answer, not a dropped
    connection (an exception left to uvicorn after Starlette's 500 started closes
    the socket, and a client may read a reset instead)."""
    told = stopped_by_disk(error)
    if told is None:
        log.error("unexpected store error", exc_info=error)
        return JSONResponse({"detail": f"internal error ({type(error).__name__})"}, 500)
    return await engram_error(request, told)


async def http_error(request: Request, error: HTTPException) -> JSONResponse:
    """FastAPI's HTTPException answer, its text detail without paths."""
    detail = error.detail
    if isinstance(detail, str):
        detail = public(detail, _home_of(request))
    detail = brief_detail(detail)
    return JSONResponse({"detail": detail}, status_code=error.status_code, headers=error.headers)


def stopped_why() -> str:
    """Why a request's work stopped: its time bound (guard.py)."""
    departure = current_departure()
    bound = f"its time bound of {departure.timeout:g} s" if departure else "its time bound"
    return (
        f"the server stopped this request at {bound}; what it was writing was left"
        " as it was before (a retain keeps the documents it finished; send it again"
        ' with "async": true for long work)'
    )


def field_detail(error: FieldError) -> list[dict[str, Any]]:
    """A limit's refusal (core/limits.py) in FastAPI's 422 shape: `loc` names the field."""
    return [{"loc": list(error.loc), "msg": error.reason, "type": error.kind}]


def limit_error(error: FieldError) -> HTTPException:
    return HTTPException(422, field_detail(error))


def not_found(what: str) -> HTTPException:
    return HTTPException(404, what)


def not_implemented(feature: str) -> HTTPException:
    """A 501 naming what Engram does not have (never a silent success)."""
    return HTTPException(501, f"not supported by Engram: {feature}")


def field_error(field: str, message: str, where: str = "body") -> HTTPException:
    """A 422 naming the field, in FastAPI's shape."""
    return HTTPException(
        422, [{"loc": [where, *field.split(".")], "msg": message, "type": "value_error"}]
    )


def not_supported(field: str, why: str, where: str = "body") -> HTTPException:
    """A 422 naming a field Hindsight has and Engram cannot honour."""
    return HTTPException(
        422,
        [
            {
                "loc": [where, field],
                "msg": f"not supported by Engram: {why}",
                "type": "not_supported",
            }
        ],
    )


def refuse(values: dict[str, Any], why: dict[str, str], where: str = "body") -> None:
    """Refuse the first field in `why` that is set to something other than
    nothing (None, empty, False): Engram cannot honour it, and silently ignoring
    it would make the caller believe it did."""
    for field, reason in why.items():
        value = values.get(field)
        if value not in (None, False) and value != [] and value != {}:
            raise not_supported(field, reason, where)
