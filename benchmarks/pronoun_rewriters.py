"""How the two first-person rewriters differ on the LoCoMo dev conversations.

`core.retain.observations.third_person` (regex, no verb agreement) renders the
facts of a rules profile; `core.retain.rules.rewrite_pronouns` (verb agreement,
compounds like "me-time" kept) rewrites turns during rules extraction. This
counts the profile lines that would read differently if profiles used
`rewrite_pronouns` too: rules facts (an agent's experiences, with the first
speaker as the agent) and verbatim facts ("Name: I ..."). Extraction itself is
the same either way (it already uses `rewrite_pronouns`).

    .venv/bin/python benchmarks/pronoun_rewriters.py [--show N]

Needs no model: seconds.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.retain.extract import chunk_exchanges  # noqa: E402
from core.retain.facts import verbatim_facts  # noqa: E402
from core.retain.importers import load_documents  # noqa: E402
from core.retain.observations import _SPEAKER_PREFIX, third_person  # noqa: E402
from core.retain.rules import RulesExtractor, rewrite_pronouns  # noqa: E402
from core.types import Network  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


def unified(text: str, speaker: str | None = None, verbatim: bool = False) -> str:
    """`third_person` with `rewrite_pronouns` doing the rewriting."""
    match = _SPEAKER_PREFIX.match(text) if verbatim else None
    if match and match.group(1).strip():
        name, body = match.group(1).strip(), match.group(2).strip()
        return f"{name} said: {rewrite_pronouns(body, name)}"
    return rewrite_pronouns(text, speaker) if speaker else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=3, help="examples per kind")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    examples: dict[str, list[tuple[str, str]]] = {"rules": [], "verbatim": []}
    documents = load_documents(DATA, "auto")
    for document in documents:
        agent = sorted({t.speaker for t in document.turns})[0]
        extractor, known, facts = RulesExtractor(), [], []
        for exchange in chunk_exchanges(document):
            got = extractor.extract(exchange, agent, known)
            facts += got
            known += [m.name for f in got for m in f.entities if m.name not in known]
        for kind, kind_facts, verbatim in (
            ("rules", facts, False),
            ("verbatim", verbatim_facts(document, agent, []), True),
        ):
            for fact in kind_facts:
                speaker = agent if fact.network is Network.EXPERIENCE else None
                old, new = (
                    third_person(fact.text, speaker, verbatim),
                    unified(fact.text, speaker, verbatim),
                )
                counts[kind] += 1
                if old != new:
                    counts[f"{kind} differ"] += 1
                    examples[kind].append((old, new))
    print(f"{len(documents)} conversations")
    for kind in ("rules", "verbatim"):
        print(f"{kind}: {counts[f'{kind} differ']} of {counts[kind]} profile lines differ")
        for old, new in examples[kind][: args.show]:
            print(f"   now:     {old[:120]}\n   unified: {new[:120]}")


if __name__ == "__main__":
    main()
