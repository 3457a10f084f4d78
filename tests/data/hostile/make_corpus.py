"""Write the hostile-input corpus: conversation files and language-model replies
that once broke the engine (issue 18) or sit at its limits.

Run `python tests/data/hostile/make_corpus.py OUT` to look at the files; the
tests call `build(folder)` into a temporary folder (some files are megabytes,
so they are generated rather than committed). `CASES` says what each file
must do: be refused with a message matching `match`, or be accepted with
`turns` turns by `speakers`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MB = 1 << 20


def _json(value) -> bytes:
    return json.dumps(value).encode()


def _messages(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"speaker": s, "text": t} for s, t in pairs]


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# name -> (bytes, expectation). A refusal names the problem; an acceptance says
# what the file holds once normalised.
INGEST: dict[str, tuple[bytes, dict]] = {
    # -- lone surrogates (issue 18, item 8) --
    "surrogate-text.json": (
        b'[{"speaker": "Ann", "text": "bad \\ud800 here"}]',
        {"refused": "lone UTF-16 surrogate"},
    ),
    "surrogate-speaker.jsonl": (
        b'{"speaker": "\\udfff", "text": "hello"}\n',
        {"refused": "lone UTF-16 surrogate"},
    ),
    "surrogate-utf8-bytes.txt": (b"Ann: \xed\xa0\x80 cesu\n", {"refused": "not valid UTF-8"}),
    "invalid-utf8.txt": (b"Ann: caf\xe9\n", {"refused": "not valid UTF-8 at byte offset 8"}),
    "utf16.txt": ("Ann: hi\n".encode("utf-16"), {"refused": "UTF-16"}),
    # -- NUL bytes, line endings, names (item 12) --
    "nul-byte.txt": (b"Ann: hello\nBob: wor\x00ld\n", {"refused": "line 2: holds a NUL byte"}),
    "nul-escape.json": (
        _json(_messages(("Ann", "hello\u0000world"))),
        {"refused": "NUL character"},
    ),
    "nul-speaker.json": (_json(_messages(("A\u0000nn", "hello"))), {"refused": "NUL character"}),
    "cr-only.txt": (
        b"Ann: I moved to Lisbon.\rBob: When was that?\rAnn: Last spring.\r",
        {"turns": 3, "speakers": ["Ann", "Bob"]},
    ),
    "crlf.md": (
        b"**Ann:** I moved to Lisbon.\r\n**Bob:** When?\r\n",
        {"turns": 2, "speakers": ["Ann", "Bob"]},
    ),
    "mixed-endings.txt": (b"Ann: one\r\nBob: two\rAnn: three\n", {"turns": 3}),
    "huge-speaker.json": (
        _json(_messages(("S" * (5 * MB), "hello"))),
        {"refused": "the speaker's name is 5,242,880 characters"},
    ),
    "long-speaker.jsonl": (
        _json({"speaker": "N" * 201, "text": "hi"}) + b"\n",
        {"refused": "a name is at most 200"},
    ),
    "bidi-speaker.json": (
        _json(_messages(("Eve\u202etxt.exe", "hello"), ("Bob", "hi"))),
        {"turns": 2, "speakers": ["Evetxt.exe", "Bob"]},
    ),
    "control-speaker.json": (
        _json(_messages(("\u202e\u2066", "hello"))),
        {"refused": "speaker's name is empty"},
    ),
    "zero-width-text.txt": ("Ann: he\u200bllo\n".encode(), {"turns": 1}),
    # -- structure --
    "empty.txt": (b"", {"refused": "empty"}),
    "whitespace.txt": (b" \n\t\r\n  ", {"refused": "empty"}),
    "bom-only.txt": (b"\xef\xbb\xbf", {"refused": "empty"}),
    "nested-deep.json": (_nested(200_000), {"refused": "nested|JSON"}),
    "nested-object.json": (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, {"refused": "nested|JSON"}),
    "not-json.json": (b"{this is not json", {"refused": "line 1"}),
    "json-number.json": (b"42", {"refused": "."}),
    "json-wrong-types.json": (
        b'[{"speaker": 7, "text": ["a"]}]',
        {"refused": "must be a non-empty string"},
    ),
    "jsonl-broken-line.jsonl": (
        b'{"speaker": "Ann", "text": "ok"}\n{"speaker": \n',
        {"refused": "line 2"},
    ),
    "turn-too-long.txt": (b"Ann: " + b"x" * 100_001 + b"\n", {"refused": "limit"}),
    "binary.txt": (bytes(range(256)) * 4, {"refused": "NUL byte"}),
    "rtl-override-text.txt": ("Ann: pay \u202e0001$ now\n".encode(), {"turns": 1}),
    "emoji-pairs.json": (
        b'[{"speaker": "Ann", "text": "party \\ud83c\\udf89 time"}]',
        {"turns": 1, "speakers": ["Ann"]},
    ),
    "locomo-broken.json": (
        _json({"conversation": {"speaker_a": "A", "speaker_b": 5, "session_1": "x"}}),
        {"refused": "."},
    ),
}

# Replies a language model might send to the fact-extraction prompt.
LLM_REPLIES: dict[str, tuple[str, dict]] = {
    "nested-deep": ("[" * 100_000 + "]" * 100_000, {"usable": False}),
    "nested-object": ('{"facts": ' + "[" * 5000 + "]" * 5000 + "}", {"usable": False}),
    "lone-surrogate-fact": (
        '{"facts": [{"text": "Ann likes \\ud800 tea", "network": "world", "entities": ["Ann"]}]}',
        {"usable": True, "clean": True},
    ),
    "lone-surrogate-raw": (
        '{"facts": [{"text": "Ann likes \ud800 tea", "network": "world"}]}',
        {"usable": True, "clean": True},
    ),
    "nul-entity": (
        '{"facts": [{"text": "Ann met Zed.", "network": "world",'
        ' "entities": [{"name": "Z\\u0000ed", "type": "person"}]}]}',
        {"usable": True, "entities": ["Zed"]},
    ),
    "bidi-entity": (
        '{"facts": [{"text": "Ann met Zed.", "network": "world",'
        ' "entities": [{"name": "Z\\u202eed", "type": "person"}]}]}',
        # The name cleaned of its override is the exchange's own "Zed" (a name
        # the exchange never says is dropped as the model's invention).
        {"usable": True, "entities": ["Zed"]},
    ),
    "only-controls-entity": (
        '{"facts": [{"text": "Ann met someone.", "network": "world",'
        ' "entities": [{"name": "\\u202e\\u0000", "type": "person"}]}]}',
        {"usable": True, "entities": []},
    ),
    "huge-fact": (
        json.dumps({"facts": [{"text": "word " * (400_000), "network": "world"}]}),
        {"usable": False},
    ),
    "huge-fact-beside-good": (
        json.dumps(
            {
                "facts": [
                    {"text": "x" * (2 * MB), "network": "world"},
                    {"text": "Ann moved to Lisbon.", "network": "world"},
                ]
            }
        ),
        # The reply is over the model's token limit: refused as cut off (the fact
        # filter itself is tested on validate_facts directly).
        {"usable": False},
    ),
    "not-json": ("I cannot help with that.", {"usable": False}),
    "facts-not-list": ('{"facts": "Ann likes tea"}', {"usable": False}),
    "wrong-types": ('{"facts": [{"text": 5, "network": []}, null, 3]}', {"usable": False}),
}

# Command lines that must end in a one-line usage error (exit 2), never a traceback.
CLI_USAGE: list[list[str]] = [
    ["memories", "list", "B", "--limit", "-1"],
    ["memories", "list", "B", "--offset", "-1"],
    ["memories", "list", "B", "--limit", "99999999999999999999"],
    ["memories", "list", "B", "--limit", "ten"],
    ["memories", "list", "B", "--order", "bogus"],
    ["memories", "list", "B", "--status", "bogus"],
    ["memories", "list", "B", "--since", "yesterday-ish"],
    ["audit", "B", "--limit", "-1"],
    ["entities", "B", "--limit", "-1"],
    ["reflections", "B", "--limit", "-1"],
    ["recall", "B", "q", "--budget", "0"],
    ["recall", "B", "q", "--budget", "-5"],
    ["recall", "B", "q", "--observations", "-1"],
    ["reflect", "B", "q", "--budget", "-1"],
    ["diff", "a", "b", "--limit", "-3"],
    ["bank", "create", "bad\udcffname"],
    ["memories", "list", "B", "--text", "\udcff\udcfe"],
    ["recall", "\udc80", "q"],
]


def build(folder: Path) -> dict[str, Path]:
    """Write every ingest file and LLM reply into `folder`; returns name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, (data, _) in INGEST.items():
        (folder / "ingest").mkdir(exist_ok=True)
        path = folder / "ingest" / name
        path.write_bytes(data)
        out[name] = path
    for name, (text, _) in LLM_REPLIES.items():
        (folder / "llm").mkdir(exist_ok=True)
        path = folder / "llm" / f"{name}.txt"
        path.write_text(text, "utf-8", errors="surrogatepass")
        out[name] = path
    return out


def size() -> dict[str, int]:
    return {"ingest": len(INGEST), "llm": len(LLM_REPLIES), "cli": len(CLI_USAGE)}


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus"))
    print(size())
