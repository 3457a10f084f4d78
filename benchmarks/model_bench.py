"""Extraction on real models against rules mode, on the same conversations.

For each model assembled in the model venv (tests/model/models.py), served by
llama.cpp behind the Ollama protocol (tests/model/llama_server.py), and for
rules mode, the demo conversations are ingested into a fresh bank, and this
reports per run:

- chunks, and the failed ones by cause (timeout, not JSON, failed validation,
  cut at the token limit, nothing survived the checks, server gone);
- seconds per turn (extraction only), tokens/s written and prompt tokens/s read;
- the facts per network (world / experience / opinion);
- the share of *transcript frames*: stored facts that are a turn copied (with or
  without "Speaker:"), not narrative;
- what the checks did to the model's facts: kept, repaired, dropped (by reason).

Usage (the Makefile's bench-model sets ENGRAM_LLAMA_PYTHON):
    ENGRAM_LLAMA_PYTHON=.venv-llm/bin/python .venv/bin/python benchmarks/model_bench.py \\
        [--docs 06,08] [--models qwen2.5-coder:0.5b,smollm2:135m] [--out benchmarks/out]

Speed on a shared machine is noise: compare the runs of one invocation (rules
vs the models), and re-run on a quiet machine for absolute figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rapidfuzz import fuzz  # noqa: E402

from core import Disposition, Engine, LanguageModel, LlmSettings, load_documents  # noqa: E402
from core.providers.embedder import shared_embedder  # noqa: E402
from core.retain.extract import chunk_exchanges  # noqa: E402

CAUSES = (
    ("timeout", ("timeout",)),
    ("cut at the token limit", ("cut off at the limit",)),
    ("nothing survived the checks", ("survived the checks",)),
    ("not JSON", ("not valid JSON",)),
    ("copied the example", ("copied the prompt's example",)),
    ("failed validation", ("failed validation", "no usable fact", "no facts, but")),
    ("server gone", ("not reachable", "broke", "stopped answering")),
)


def cause_of(reason: str) -> str:
    for cause, needles in CAUSES:
        if any(n in reason for n in needles):
            return cause
    return "other"


def is_transcript_frame(text: str, turns: list[tuple[str, str]]) -> bool:
    """A fact that is a turn copied, with or without its speaker's prefix."""
    head = re.match(r'^\s*([^:"]{1,40})(?: said)?:\s*"?(.+?)"?\s*$', text, re.DOTALL)
    body = head.group(2) if head else text
    for speaker, turn in turns:
        if head and head.group(1).strip() == speaker:
            return True
        if fuzz.ratio(body.casefold(), turn.casefold()) >= 90:
            return True
    return False


def run(engine: Engine, name: str, files: list[Path], mode: str, lm: LanguageModel | None):
    label = json.loads((ROOT / "resources/demo/bank.json").read_text("utf-8"))
    bank = engine.create_bank(name, agent_name=label["agent_name"])
    bank.set_profile(disposition=Disposition.from_dict(label["disposition"]))
    out = {
        "run": name,
        "chunks": 0,
        "failed": {},
        "turns": 0,
        "extract_s": 0.0,
        "networks": {},
        "facts": 0,
        "frames": 0,
        "given": 0,
        "dropped": {},
        "repaired": 0,
    }
    samples: dict[str, list] = {"facts": [], "checked": [], "failures": []}
    started = time.perf_counter()
    for path in files:
        [document] = load_documents(path)
        out["chunks"] += len(chunk_exchanges(document))
        report = bank.ingest(path, mode=mode, llm=lm)
        out["turns"] += len(document.turns)
        out["extract_s"] += report.timings.get("extract", 0.0)
        for failure in report.failures:
            cause = cause_of(failure.reason)
            out["failed"][cause] = out["failed"].get(cause, 0) + 1
        out["given"] += report.model_facts
        out["repaired"] += len({c.text for c in report.facts_repaired})
        for c in report.facts_dropped:
            key = c.reason.split(":", 1)[0]
            out["dropped"][key] = out["dropped"].get(key, 0) + 1
        # What the checks did, fact by fact, to read afterwards (model_bench_facts.json).
        samples["checked"] += [
            {"text": c.text, "reason": c.reason, "dropped": c.dropped} for c in report.checked
        ]
        samples["failures"] += [{"turns": f.turn_ids, "reason": f.reason} for f in report.failures]
        print(
            f"  {name} {path.name}: {report.facts_total} facts, {len(report.failures)} failed",
            flush=True,
        )
    turns = {t.id: (t.speaker, t.text) for d in bank.documents() for t in bank.turns(d.id)}
    for unit in bank.units(limit=None):
        if str(unit.network) == "observation":
            continue
        out["facts"] += 1
        out["networks"][str(unit.network)] = out["networks"].get(str(unit.network), 0) + 1
        sources = [turns[s] for s in unit.source_ids if s in turns]
        frame = is_transcript_frame(unit.text, sources)
        out["frames"] += frame
        samples["facts"].append(
            {
                "text": unit.text,
                "network": str(unit.network),
                "sources": [f"{s}: {t}" for s, t in sources],
                "frame": frame,
            }
        )
    out["wall_s"] = time.perf_counter() - started
    if lm is not None:
        out["eval_tps"] = lm.speed.eval_rate
        out["prompt_tps"] = lm.speed.prompt_rate
    return out, samples


def table(rows: list[dict]) -> str:
    head = (
        "| run | chunks | failed (by cause) | s/turn | tokens/s (write / read) | world / exp / opinion"
        " | transcript frames | model's facts: kept / repaired / dropped (by reason) |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        failed = sum(r["failed"].values())
        causes = ", ".join(f"{n} {c}" for c, n in sorted(r["failed"].items(), key=lambda x: -x[1]))
        n = r["networks"]
        tps = (
            f"{r['eval_tps']:.1f} / {r['prompt_tps']:.0f}"
            if r.get("eval_tps") and r.get("prompt_tps")
            else "-"
        )
        frames = f"{r['frames']}/{r['facts']} ({100 * r['frames'] / max(1, r['facts']):.0f}%)"
        dropped = sum(r["dropped"].values())
        checks = (
            f"{r['given'] - dropped} / {r['repaired']} / {dropped}"
            + (
                " (" + ", ".join(f"{v} {k}" for k, v in r["dropped"].items()) + ")"
                if dropped
                else ""
            )
            if r["given"]
            else "-"
        )
        lines.append(
            f"| {r['run']} | {r['chunks']} | {failed}"
            + (f" ({causes})" if causes else "")
            + f" | {r['extract_s'] / max(1, r['turns']):.2f} | {tps}"
            f" | {n.get('world', 0)} / {n.get('experience', 0)} / {n.get('opinion', 0)}"
            f" | {frames} | {checks} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="", help="demo file prefixes (06,08), or first:N")
    parser.add_argument("--models", default="", help="model names (default: every assembled)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    args = parser.parse_args()
    if args.docs:
        os.environ["ENGRAM_TEST_MODEL_DOCS"] = args.docs
    from tests.model.conftest import LlamaServer, available_models, demo_files

    files = demo_files()
    models = available_models()
    if args.models:
        wanted = args.models.split(",")
        models = [m for m in models if m[0] in wanted]
    rows = []
    samples = {}
    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="model-bench-") as scratch:
        folder = Path(scratch)
        with Engine(folder / "home", embedder=shared_embedder()) as engine:
            row, samples["rules"] = run(engine, "rules", files, "rules", None)
            rows.append(row)
            save(out, rows, samples)
            if models:  # --models none: rules alone
                server = LlamaServer(folder, models)
                try:
                    for name, _path in models:
                        settings = LlmSettings(host=server.url, model=name, timeout=args.timeout)
                        with LanguageModel(settings) as lm:
                            row, samples[name] = run(engine, name, files, "llm", lm)
                            rows.append(row)
                            save(out, rows, samples)
                finally:
                    server.stop()
    print(f"\nfiles: {', '.join(p.name for p in files)}\n\n{table(rows)}")
    return 0


def save(out: Path, rows: list[dict], samples: dict) -> None:
    """The rows so far (after each run: a run cut short keeps those before it)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "model_bench.json").write_text(json.dumps(rows, indent=2), "utf-8")
    (out / "model_bench.md").write_text(table(rows) + "\n", "utf-8")
    (out / "model_bench_facts.json").write_text(json.dumps(samples, indent=1), "utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
