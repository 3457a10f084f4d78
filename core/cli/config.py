"""`engram config keys|show|set|reset`: a bank's retain and recall settings.

Every key, its type, range, default and help come from the spec
(core/config.py), the same one the settings pane and the HTTP API read; a
value typed here is checked by it ("false" is False, 60.7 is no integer).
The spec (and pydantic) loads in the handlers, never for `engram --help`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from core import InvalidInputError
from core.cli.output import print_json

if TYPE_CHECKING:
    from core import Engine


def register(sub: argparse._SubParsersAction) -> None:
    config = sub.add_parser("config", help="a bank's retain and recall settings")
    actions = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    keys = actions.add_parser("keys", help="every setting: type, range, default and help")
    keys.add_argument("--json", action="store_true")
    keys.set_defaults(handler=list_keys)
    show = actions.add_parser("show", help="a bank's settings (changed ones marked *)")
    show.add_argument("bank")
    show.add_argument("keys", nargs="*", metavar="KEY", help="only these settings")
    show.add_argument("--changed", action="store_true", help="only settings that differ")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=show_config)
    set_ = actions.add_parser(
        "set", help="change settings: KEY=VALUE ... (all are checked before any is saved)"
    )
    set_.add_argument("bank")
    set_.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
    set_.set_defaults(handler=set_config)
    reset = actions.add_parser("reset", help="back to the defaults (all, or these keys)")
    reset.add_argument("bank")
    reset.add_argument("keys", nargs="*", metavar="KEY")
    reset.set_defaults(handler=reset_config)


def list_keys(args, engine: Engine) -> int:
    from core import CONFIG_SPEC as SPEC
    from core import config_spec_table as spec_table

    if args.json:
        print_json(spec_table())
        return 0
    width = max(map(len, SPEC))
    for key, setting in SPEC.items():
        print(f"{key:<{width}}  {setting.describe()}")
    return 0


def show_config(args, engine: Engine) -> int:
    from core import CONFIG_DEFAULTS as DEFAULTS

    _check_known(args.keys)
    bank = engine.open_bank(args.bank)
    config = bank.profile().config
    shown = {
        key: value
        for key, value in config.items()
        if (not args.keys or key in args.keys) and (not args.changed or value != DEFAULTS[key])
    }
    if args.json:
        print_json(shown)
        return 0
    width = max(map(len, shown), default=0)
    for key, value in shown.items():
        mark = "*" if value != DEFAULTS[key] else " "
        default = f"  (default {DEFAULTS[key]!r})" if mark == "*" else ""
        print(f"{mark} {key:<{width}}  {value!r}{default}")
    for warning in bank.profile_warnings():
        print(f"-- {warning}")
    return 0


def set_config(args, engine: Engine) -> int:
    from core import parse_setting

    changes = {}
    for assignment in args.assignments:
        key, equals, text = assignment.partition("=")
        if not equals:
            raise InvalidInputError(f"expected KEY=VALUE, got {assignment!r}")
        changes[key.strip()] = parse_setting(key.strip(), text)
    bank = engine.open_bank(args.bank)
    bank.set_profile(config=changes)
    for key, value in changes.items():
        print(f"{key} = {value!r}")
    return 0


def reset_config(args, engine: Engine) -> int:
    from core import CONFIG_SPEC as SPEC

    _check_known(args.keys)
    bank = engine.open_bank(args.bank)
    keys = args.keys or list(SPEC)
    bank.set_profile(config=dict.fromkeys(keys))  # None: back to the default
    print(f"{len(args.keys) or 'every'} setting(s) back to the default")
    return 0


def _check_known(keys: list[str]) -> None:
    from core import CONFIG_SPEC as SPEC
    from core import SettingError

    for key in keys:
        if key not in SPEC:
            raise SettingError(f"unknown setting {key!r}: `engram config keys` lists them")
