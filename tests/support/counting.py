"""A bank whose calls are counted: what the studio asks of the engine for one
user action, each call a round trip once the bank is remote (issue 25, item 4).
Used by tests/app/test_calls_per_action.py and benchmarks/calls_per_action.py."""

from __future__ import annotations

from collections import Counter
from typing import Any


class Counting:
    """A bank whose public method calls (and property reads) are counted;
    everything else passes through. Thread-safe enough for counting: the
    runner's workers call it, and `Counter`'s `+=` under the GIL loses nothing
    the tests rely on (they read the count once the action has finished)."""

    def __init__(self, bank: Any) -> None:
        self._bank = bank
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._bank, name)
        if name.startswith("_"):
            return value
        if not callable(value):
            self.calls[name] += 1  # a property (config, name) is a read too
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return value(*args, **kwargs)

        return counted

    def take(self) -> dict[str, Any]:
        """The calls since the last take: their total and count by method."""
        calls, self.calls = dict(self.calls), Counter()
        return {"total": sum(calls.values()), "by_method": dict(sorted(calls.items()))}
