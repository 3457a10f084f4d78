"""`engram <command>`: everything the studio does, headless.

Each command group lives in its own module with a `register(subparsers)`
function that adds its commands; a command's handler takes the parsed
arguments and an `Engine` and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from core.types import EngramError

# Command-group modules under core.cli, in the order `engram --help` lists them.
COMMAND_MODULES = ["banks", "entities", "ingest", "recall", "reflect", "curate", "snapshot"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="engram",
        description="Engram Studio: inspect and curate agent memory. "
        "Without a command, the studio opens.",
    )
    parser.add_argument("--home", help="data folder (default: ENGRAM_HOME or the user data dir)")
    add_timeout_option(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"core.cli.{name}").register(sub)
    return parser


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


def _timeout(text: str) -> float:
    from core.settings import parse_timeout

    try:
        return parse_timeout(text)
    except EngramError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from core.engine import Engine

    try:
        engine = Engine(args.home)
    except EngramError as error:  # e.g. a bad ENGRAM_OLLAMA_TIMEOUT
        print(f"engram: {error}", file=sys.stderr)
        return 1
    if getattr(args, "ollama_timeout", None) is not None:
        from dataclasses import replace

        # For this run only: the flag does not change the saved settings.
        engine.settings = replace(engine.settings, ollama_timeout=args.ollama_timeout)
    try:
        return int(args.handler(args, engine) or 0)
    except EngramError as error:
        print(f"engram: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`engram memories list | head`): stop quietly, and
        # keep Python from complaining again when it flushes stdout at exit.
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        print("engram: interrupted", file=sys.stderr)
        return 130
    finally:
        engine.close()


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (tests): nothing will be flushed to it


if __name__ == "__main__":
    sys.exit(main())
