"""`engram tokens add|list|revoke`: one API token per agent, so the journal and
the audit say which agent did what.

A token is printed once, when it is made; the data folder keeps only its hash.
A server that is running accepts a new token, and refuses a revoked one, from
its next request on.
"""

from __future__ import annotations

import argparse
import sys

from core import Engine
from core.cli.output import print_json


def register(sub: argparse._SubParsersAction) -> None:
    tokens = sub.add_parser(
        "tokens",
        help="named API tokens, one per agent (its requests are journaled under its name)",
        description="Named bearer tokens for agents. Each request's actor is its token's "
        "name (plus the MCP client's name where it gives one). The data folder's own token "
        "(<home>/api-token, or ENGRAM_API_TOKEN) is the one named 'default'.",
    )
    tokens_sub = tokens.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    add = tokens_sub.add_parser("add", help="make a token and print it (shown only once)")
    add.add_argument("name", help="who uses it: 1-40 letters, digits, '.', '_' or '-'")
    add.set_defaults(handler=add_token)
    listing = tokens_sub.add_parser("list", help="the tokens by name (never their values)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_tokens)
    revoke = tokens_sub.add_parser("revoke", help="stop accepting a token")
    revoke.add_argument("name")
    revoke.set_defaults(handler=revoke_token)


def add_token(args, engine: Engine) -> int:
    from core.server.token import add_token

    secret = add_token(engine.home, args.name)
    print(secret)
    print(
        f"token {args.name!r} made: it is shown only this once. Agents send it as "
        f"'Authorization: Bearer <token>'; `engram tokens revoke {args.name}` stops it.",
        file=sys.stderr,
    )
    return 0


def list_tokens(args, engine: Engine) -> int:
    from core.server.token import list_tokens

    tokens = list_tokens(engine.home)
    if args.json:
        print_json(
            [{"name": t.name, "created_at": t.created_at, "default": t.default} for t in tokens]
        )
        return 0
    for t in tokens:
        if t.default:
            where = "ENGRAM_API_TOKEN" if t.from_env else "the data folder's api-token file"
            print(f"{t.name:<24} (default: {where})")
        else:
            print(f"{t.name:<24} made {t.created_at}")
    return 0


def revoke_token(args, engine: Engine) -> int:
    from core.server.token import revoke_token

    revoke_token(engine.home, args.name)
    print(f"token {args.name!r} revoked: servers refuse it from their next request on")
    return 0
