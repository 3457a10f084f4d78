"""`engram <command>`: everything the studio does, headless.

Each command group lives in its own module with a `register(subparsers)`
function that adds its commands; a command's handler takes the parsed
arguments and an `Engine` and returns an exit code. The modules import
nothing heavy at module level (stores and the model load in the handlers),
so building the whole parser tree for `engram --help` or an argument error
stays instant. The `engram` entry point (app/main.py) adds the studio's own
commands to the same tree.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from core import EngramError
from core.text import has_surrogate, printable

# Command-group modules under core.cli, in the order `engram --help` lists them.
COMMAND_MODULES = [
    "banks",
    "config",
    "entities",
    "ingest",
    "recall",
    "reflect",
    "curate",
    "documents",
    "jobs",
    "snapshot",
    "serve",
    "tokens",
    "activity",
]
DESCRIPTION = "Engram Studio: inspect and curate agent memory."


def build_parser(
    description: str = DESCRIPTION,
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser with every engine command, and its subparsers (to add more)."""
    parser = argparse.ArgumentParser(prog="engram", description=description)
    parser.add_argument("--home", help="data folder (default: ENGRAM_HOME or the user data dir)")
    parser.add_argument(
        "--remote",
        metavar="URL",
        help="run the command on the banks an `engram serve` at URL serves (default:"
        " ENGRAM_REMOTE); its token from ENGRAM_API_TOKEN",
    )
    add_timeout_option(parser, default=None)
    add_actor_option(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"core.cli.{name}").register(sub)
    return parser, sub


def add_timeout_option(
    parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS
) -> None:
    """`--ollama-timeout SECONDS`, before or after the command (a command's own
    copy leaves the global value alone when it is not given)."""
    parser.add_argument(
        "--ollama-timeout",
        type=_timeout,
        default=default,
        metavar="SECONDS",
        help="seconds Ollama may stay silent before a call fails (default: Settings, "
        "or ENGRAM_OLLAMA_TIMEOUT; replies stream, so a slow model that keeps writing is fine)",
    )


def add_actor_option(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """`--actor NAME`, before or after the command: who the audit and the activity
    journal say did it (default "cli"; a script can name itself)."""
    parser.add_argument(
        "--actor",
        type=_actor,
        default=default,
        metavar="NAME",
        help="who does it, as the audit and the activity journal record it (default: cli)",
    )


def _actor(text: str) -> str:
    from core.context import clean_name

    name = clean_name(text)
    if not name:
        raise argparse.ArgumentTypeError("an actor needs a name")
    return name


def _timeout(text: str) -> float:
    from core import parse_timeout

    try:
        return parse_timeout(text)
    except EngramError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    return run(args, parser)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed engine command with an Engine on `args.home`."""
    broken = undecodable_argument(args)
    if broken:
        parser.error(f"argument {broken} is not valid UTF-8 text")
    from core.context import CLI, Caller, process_caller, set_process_caller

    # Who every write and journal entry of this run names (core/context.py); a
    # routed command tells the owner (core/server/client.py).
    before = process_caller()
    set_process_caller(Caller(getattr(args, "actor", None) or CLI, CLI))
    try:
        return _run(args, parser)
    finally:
        set_process_caller(before)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        engine = _engine(args)
    except EngramError as error:  # e.g. a malformed ENGRAM_OLLAMA_TIMEOUT
        print(f"engram: {error}", file=sys.stderr)
        return 1
    if getattr(args, "ollama_timeout", None) is not None and hasattr(engine, "settings"):
        # For this run only: the flag does not change the saved settings.
        engine.settings = engine.settings.with_values(ollama_timeout=args.ollama_timeout)
    code = 1
    try:
        code = int(args.handler(args, engine) or 0)
    except EngramError as error:
        if getattr(error, "status", 0) == 401 and remote_url(args):
            error = (
                f"the server at {remote_url(args)} refused the token in ENGRAM_API_TOKEN ({error})"
            )
        print(f"engram: {error}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`engram memories list | head`): stop quietly, and
        # keep Python from complaining again when it flushes stdout at exit.
        _silence_stdout()
        code = 0
    except KeyboardInterrupt:
        print("engram: interrupted", file=sys.stderr)
        code = 130
    except Exception as error:
        # Imported here: it loads DuckDB, which `engram banks` or --help never need.
        from core import stopped_by_disk

        failure = stopped_by_disk(error)
        if failure is None:
            raise
        print(f"engram: {failure}", file=sys.stderr)
    finally:
        code = _close(engine, code)
    return code


def _close(engine, code: int) -> int:
    """Close every bank; a close the disk refuses is reported, not a traceback."""
    try:
        engine.close()
    except EngramError as error:
        print(f"engram: {error}", file=sys.stderr)
        return code or 1
    return code


# Arguments that name files: any bytes are a valid path on Linux, and Python
# keeps the undecodable ones (as surrogates) so the file still opens.
PATH_ARGUMENTS = frozenset({"files", "path", "home", "a", "b", "out"})


def undecodable_argument(args: argparse.Namespace) -> str | None:
    """The first argument (not a path) holding bytes that were not UTF-8."""
    for dest, value in vars(args).items():
        if dest in PATH_ARGUMENTS:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and has_surrogate(item):
                return f"{dest} {printable(item)}"
    return None


# Commands that serve a bank themselves: never routed to another owner.
SERVING_COMMANDS = {"serve", "mcp"}


def _engine(args):
    """The data folder's Engine; for every command but the serving ones, wrapped
    to reach each bank where it lives: a bank another live process owns and
    serves goes through that owner (core/cli/remote.py)."""
    remote = remote_url(args)
    if remote:
        return _remote_engine(args, remote)
    from core import Engine

    engine = Engine(args.home)
    if args.command in SERVING_COMMANDS:
        return engine
    from core.cli.remote import RoutingEngine

    bank = getattr(args, "bank", None)
    return RoutingEngine(engine.home, bank if isinstance(bank, str) else None, engine=engine)


def remote_url(args) -> str:
    """The server `--remote` (else ENGRAM_REMOTE) names, or ""."""
    import os

    from core.server.owner import REMOTE_ENV

    return (getattr(args, "remote", None) or os.environ.get(REMOTE_ENV, "")).strip()


def _remote_engine(args, url: str):
    """The engine of the banks served at `url` (`RemoteEngine`: the same calls as
    a routed command makes to a local owner), with the token ENGRAM_API_TOKEN holds."""
    import os

    from core.server.client import RemoteEngine
    from core.server.token import ENV as TOKEN_ENV

    if args.command in SERVING_COMMANDS:
        raise EngramError(
            f"`engram {args.command}` serves this computer's banks; it does not run against"
            f" --remote {url} (unset ENGRAM_REMOTE to run it)"
        )
    if not url.startswith(("http://", "https://")):
        raise EngramError(f"--remote {url!r} is not a server address: give http(s)://HOST:PORT")
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise EngramError(f"--remote {url} needs the server's token: set {TOKEN_ENV} to it")
    return RemoteEngine(url, token, home=Path(args.home) if args.home else None)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (tests): nothing will be flushed to it


if __name__ == "__main__":
    sys.exit(main())
