"""The route a routed `engram` command goes through: one `Bank` method per call.

`POST /engram/v1/banks/{bank_id}/call/{method}` with `{"args": [...],
"kwargs": {...}}` in the wire encoding of core/server/client.py; answers
`{"value": ...}` in the same encoding. Only the methods in `READ_METHODS`
and `WRITE_METHODS` run, under the bank's lock; writes report their `Change`
(`ServedBanks.changed`), so an open studio refreshes its panes.
An engine error answers 4xx with its one-line message, as the CLI prints it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from core.server.client import READ_METHODS, WRITE_METHODS, decode, encode
from core.types import (
    BankLockedError,
    BankNotFoundError,
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


router = APIRouter(prefix=PREFIX, tags=["Engram CLI"])


@router.post("/banks/{bank_id}/call/{method}")
def call(bank_id: str, method: str, body: Call, request: Request) -> dict:
    """Run one Bank method in this process: what a routed `engram` command does."""
    served = request.app.state.served
    if method not in READ_METHODS | WRITE_METHODS:
        raise HTTPException(404, f"no bank method {method!r} can be called here")
    try:
        args, kwargs = decode(body.args), decode(body.kwargs)
    except (ValueError, TypeError, KeyError) as error:
        raise HTTPException(422, f"arguments: {error}") from None
    try:
        # Reads too run under the bank's lock: a studio may be closing the bank.
        with served.using(bank_id) as bank:
            value = _run(served, bank, method, args, kwargs)
    except BankNotFoundError as error:
        raise HTTPException(404, str(error)) from None
    except BankLockedError as error:
        raise HTTPException(409, str(error)) from None
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
