"""Engine errors as HTTP answers, and the 422 for a field Engram cannot honour."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from core import LanguageModelError, ReflectionError, SnapshotError
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
)


class RetainFailed(EngramError):
    """No part of a document could be extracted: nothing of it was written (502)."""


# Most specific first: the first class an error is an instance of decides.
STATUS: list[tuple[type[Exception], int]] = [
    (BankNotFoundError, 404),
    (BankExistsError, 409),
    (BankLockedError, 409),
    (EmbeddingMismatchError, 409),
    (InvalidInputError, 422),
    (SnapshotError, 422),
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


async def engram_error(_request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, FieldError):
        return JSONResponse({"detail": field_detail(error)}, status_code=422)
    if isinstance(error, CancelledError):
        return JSONResponse({"detail": stopped_why()}, status_code=504)
    return JSONResponse({"detail": str(error)}, status_code=status_of(error))


def stopped_why() -> str:
    departure = current_departure()
    bound = f"its time bound of {departure.timeout:g} s" if departure else "its time bound"
    return (
        f"the server stopped this request at {bound}; what it was writing was left"
        " as it was before (a retain keeps the documents it finished; send it again"
        ' with "async": true for long work)'
    )


def field_detail(error: FieldError) -> list[dict[str, Any]]:
    """A limit's refusal in FastAPI's 422 shape: `loc` names the field."""
    return [{"loc": list(error.loc), "msg": error.reason, "type": error.kind}]


def field_error(error: FieldError) -> HTTPException:
    return HTTPException(422, field_detail(error))


def not_found(what: str) -> HTTPException:
    return HTTPException(404, what)


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
