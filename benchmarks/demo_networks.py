"""What the demo bank teaches: its units per network and the facts that still read as transcript.

Builds "Demo: Juniper" as the studio does (app/demo.py, rules mode, observations
built) in a temporary home and prints:

- units per network (world / experience / opinion / observation);
- transcript frames among the facts, by kind:
  - *colon*: a speaker's frame before their words ("Priya said: Guilty");
  - *quoted question*: a question kept in quotes before its answer
    ('Maya asked Leo "Is it at 11?"; …');
  - *pasted clause*: reported speech whose clause opens with a capital that is
    neither a name the bank knows nor "I" ("Maya said that That's fine"): a turn
    pasted after "said that", not a sentence.
  A turn kept as it was is no frame when it reads as a fact ("Tomás cancelled
  the migration"); benchmarks/model_bench.py counts those too;
- every opinion, for a person to read (--show N also prints N sample facts of
  each other network).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/demo_networks.py [--show N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.demo import build_demo_bank  # noqa: E402
from core import Engine  # noqa: E402

_COLON_SPEAKER = re.compile(r"^(?P<who>[^:\"]{1,40}?)(?: said| asked| answered)?:\s")
_QUOTED_QUESTION = re.compile(r"\basked (?:me|\w+) [\"“][^\"”]*\?[\"”]")
_CLAUSE = re.compile(r"\b(?:said that|thinks) (?P<word>[A-Z][\w'’]*)")


def frame_kind(text: str, speakers: list[tuple[str, str]], names: set[str]) -> str:
    """The kind of transcript frame `text` is, or "" when it reads as a fact."""
    head = _COLON_SPEAKER.match(text)
    if head and head["who"].strip() in {s for s, _ in speakers}:
        return "colon"
    if _QUOTED_QUESTION.search(text):
        return "quoted question"
    for m in _CLAUSE.finditer(text):
        word = re.sub(r"['’]s$", "", m["word"])
        if word != "I" and word.casefold() not in names:
            return "pasted clause"
    return ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=0, help="sample facts per other network")
    parser.add_argument("--out", type=Path, help="write every unit (network, frame, text) here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        engine = Engine(home)
        bank = build_demo_bank(engine).bank
        turns = {t.id: (t.speaker, t.text) for d in bank.documents() for t in bank.turns(d.id)}
        # Names, and each word of one ("Leo" of "Leo Fischer"), keep their capital.
        spelled = [n for e in bank.entities() for n in (e.name, *e.aliases)]
        names = {w.casefold() for n in spelled for w in (n, *n.split())}
        counts: Counter[str] = Counter()
        frames: Counter[str] = Counter()
        by_network: dict[str, list[str]] = {}
        rows = []
        for unit in bank.units(limit=None):
            network = str(unit.network)
            counts[network] += 1
            kind = ""
            if network != "observation":
                sources = [turns[s] for s in unit.source_ids if s in turns]
                kind = frame_kind(unit.text, sources, names)
                frames[kind or "none"] += 1
            by_network.setdefault(network, []).append(unit.text)
            rows.append({"network": network, "frame": kind, "text": unit.text})
        facts = sum(v for k, v in counts.items() if k != "observation")
        print("units per network:", dict(sorted(counts.items())))
        framed = facts - frames["none"]
        print(f"transcript frames: {framed}/{facts} facts", dict(frames))
        for kind in ("colon", "quoted question", "pasted clause"):
            for row in [r for r in rows if r["frame"] == kind][:5]:
                print(f"  [{kind}] {row['text'][:150]}")
        print("opinions:")
        for text in by_network.get("opinion", []):
            print("  ", text)
        rng = random.Random(0)
        for network in ("world", "experience", "observation"):
            texts = by_network.get(network, [])
            for text in rng.sample(texts, min(args.show, len(texts))):
                print(f"  [{network}] {text[:200]}")
        if args.out:
            args.out.write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
