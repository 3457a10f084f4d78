"""Retain's CPU against an item's length (issue 27, item 5): one item of N
sentences and one of 4N, retained over HTTP by one `engram serve`-like server
in this process, each into a fresh bank, the CPU time of the process (every
thread's: the request's, the embedder's) measured around each request.

The issue measured 1,000 sentences at 21.8 CPU s and 4,000 at 233.5 (x10.7 for
x4 the text). Linear means the ratio stays near 4; the test
(tests/core/test_retain_scaling.py) holds it under 5. An item now holds at most
100,000 characters (core/limits.py: 4,000 of these sentences are a 422), so
the default is 400 and 1,600.

    .venv/bin/python benchmarks/retain_scaling.py [--sentences 400] [--mode rules]
        [--embedder hash|minilm]

CPU time, never wall time: a busy machine slows both sizes alike.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import Engine  # noqa: E402
from core.server import ServedBanks, start_server  # noqa: E402
from tests.core.test_retain_scaling import long_message  # noqa: E402

TOKEN = "retain-scaling-token-0123456789"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--mode", default="rules", choices=["rules", "verbatim"])
    parser.add_argument("--embedder", default="hash", choices=["hash", "minilm"])
    args = parser.parse_args()
    if args.embedder == "hash":
        from tests.support.embedders import HashEmbedder

        embedder = HashEmbedder()
    else:
        from core.providers.embedder import shared_embedder

        embedder = shared_embedder()

    import httpx

    with tempfile.TemporaryDirectory(prefix="engram-scaling-") as tmp:
        engine = Engine(Path(tmp) / "home", embedder=embedder)
        handle = start_server(ServedBanks(engine, open_on_demand=True), "127.0.0.1", 0, TOKEN)
        try:
            with httpx.Client(
                base_url=handle.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=3600
            ) as http:

                def retain(bank: str, sentences: int) -> tuple[float, int]:
                    text = long_message(sentences, sentences)
                    item = {"content": text, "document_id": "long", "strategy": args.mode}
                    started = time.process_time()
                    r = http.post(f"/v1/default/banks/{bank}/memories", json={"items": [item]})
                    r.raise_for_status()
                    return time.process_time() - started, len(text)

                retain("warm-up", 20)
                n = args.sentences
                small, small_chars = retain("small", n)
                large, large_chars = retain("large", 4 * n)
        finally:
            handle.stop()
            engine.close()
    print(f"{n} sentences ({small_chars:,} chars): {small:.2f} CPU s")
    print(f"{4 * n} sentences ({large_chars:,} chars): {large:.2f} CPU s")
    print(f"ratio for x{large_chars / small_chars:.2f} the text: x{large / small:.2f} the CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
