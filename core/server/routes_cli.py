"""The route a routed `engram` command goes through: one `Bank` method per call.

`POST /engram/v1/banks/{bank_id}/call/{method}` with `{"args": [...],
"kwargs": {...}}` in the wire encoding of core/server/client.py; answers
`{"value": ...}` in the same encoding. Only the methods in `READ_METHODS`
and `WRITE_METHODS` run: writes under the bank's lock, reporting their
`Change` (`ServedBanks.changed`) so an open studio refreshes its panes; reads
without it (they never wait behind a write).
An engine error answers 4xx with its one-line message, as the CLI prints it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from core.limits import FieldError, first_unstorable
from core.server.admission import routed_call
from core.server.client import READ_METHODS, WRITE_METHODS, decode, encode
from core.server.errors import field_error, stopped_why
from core.types import (
    BankLockedError,
    BankNotFoundError,
    CancelledError,
    Change,
    Document,
    EngramError,
    InvalidInputError,
)

PREFIX = "/engram/v1"


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)


def _language_model(engine, spec: dict | None):
    """None: the owner's configured model (what `llm=None` means to the engine)."""
    if not spec or spec.get("owners"):
        return None
    from core.providers.llm import LlmSettings, open_model

    return open_model(
        LlmSettings(
            host=str(spec["host"]),
            model=str(spec["model"]),
            timeout=engine.settings.ollama_timeout,
            provider=engine.settings.llm_provider,
        )
    )


def _run(served, bank, method: str, args: list, kwargs: dict) -> Any:
    if method in ("ingest", "process_jobs"):
        kwargs["llm"] = _language_model(served.engine, kwargs.get("llm"))
    if method == "ingest" and not (
        args and isinstance(args[0], list) and all(isinstance(d, Document) for d in args[0])
    ):
        # Never a path: the owner reads no file a client names.
        raise InvalidInputError("ingest takes the conversations themselves (Documents)")
    try:
        return getattr(bank, method)(*args, **kwargs)
    finally:
        if kwargs.get("llm") is not None:
            kwargs["llm"].close()


def _change_of(value: Any) -> Change | None:
    if isinstance(value, Change):
        return value
    change = getattr(value, "change", None)
    return change if isinstance(change, Change) else None


def _call(served, bank_id: str, method: str, args: list, kwargs: dict) -> Any:
    """Writes under the bank's lock (admitted already: the middleware holds it);
    reads without it, so they never queue behind a write. A read that the
    bank's closing (the studio switched banks) cut short is a 409."""
    if method in WRITE_METHODS:
        with served.using(bank_id) as bank:
            return _run(served, bank, method, args, kwargs)
    bank = served.get(bank_id)
    try:
        return _run(served, bank, method, args, kwargs)
    except Exception:
        if bank.closed:
            raise HTTPException(409, f"bank {bank_id!r} closed while this call ran") from None
        raise


router = APIRouter(prefix=PREFIX, tags=["Engram CLI"])


@router.post("/banks/{bank_id}/call/{method}")
@routed_call
def call(bank_id: str, method: str, body: Call, request: Request) -> dict:
    """Run one Bank method in this process: what a routed `engram` command does."""
    served = request.app.state.served
    if method not in READ_METHODS | WRITE_METHODS:
        raise HTTPException(404, f"no bank method {method!r} can be called here")
    # Before decoding (recursive): nothing too deep, no text a store cannot keep.
    raw = first_unstorable(body.args, ("args",)) or first_unstorable(body.kwargs, ("kwargs",))
    if raw is not None and raw.kind == "too_deep":
        raise field_error(raw)
    try:
        args, kwargs = decode(body.args), decode(body.kwargs)
    except (ValueError, TypeError, KeyError) as error:
        raise HTTPException(422, f"arguments: {error}") from None
    if raw is not None:  # named as the method's arguments, not as their wire encoding
        raise field_error(
            first_unstorable(args, ("args",)) or first_unstorable(kwargs, ("kwargs",)) or raw
        )
    try:
        value = _call(served, bank_id, method, args, kwargs)
    except BankNotFoundError as error:
        raise HTTPException(404, str(error)) from None
    except BankLockedError as error:
        raise HTTPException(409, str(error)) from None
    except FieldError as error:
        raise field_error(error) from None
    except CancelledError:
        raise HTTPException(504, stopped_why()) from None
    except InvalidInputError as error:
        raise HTTPException(422, str(error)) from None
    except EngramError as error:
        raise HTTPException(400, str(error)) from None
    except TypeError as error:  # wrong arguments for the method
        raise HTTPException(422, f"{method}: {error}") from None
    change = _change_of(value) if method in WRITE_METHODS else None
    if change is not None:
        # The command runs the observation jobs it queued itself (`--no-jobs`:
        # its user left them), so a headless server's worker leaves them to it.
        served.changed(bank_id, change, caller_runs_jobs=True)
    return {"value": encode(value)}
