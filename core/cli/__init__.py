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

from core.types import EngramError

# Command-group modules under core.cli, in the order `engram --help` lists them.
COMMAND_MODULES = ["banks", "ingest", "recall", "reflect", "curate", "snapshot"]
DESCRIPTION = "Engram Studio: inspect and curate agent memory."


def build_parser(
    description: str = DESCRIPTION,
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser with every engine command, and its subparsers (to add more)."""
    parser = argparse.ArgumentParser(prog="engram", description=description)
    parser.add_argument("--home", help="data folder (default: ENGRAM_HOME or the user data dir)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"core.cli.{name}").register(sub)
    return parser, sub


def run(args: argparse.Namespace) -> int:
    """Run a parsed engine command with an Engine on `args.home`."""
    from core.engine import Engine

    engine = Engine(args.home)
    try:
        return int(args.handler(args, engine) or 0)
    except EngramError as error:
        print(f"engram: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("engram: interrupted", file=sys.stderr)
        return 130
    finally:
        engine.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
