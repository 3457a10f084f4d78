"""A reflection's answer as JSON fitting a caller's schema (Hindsight's
`response_schema` / `structured_output`).

With a language model the answer is restated in the schema through Ollama's
structured output (`format` = the schema) and checked against it, with the
model's usual re-asks. Offline there is no model to compose anything, so the
rules fill only what an extractive answer can honestly give: text fields get
the most relevant memories, lists of text get them one by one, optional
fields are left out. A schema that needs more (a number, a yes/no, a choice
from an enum) is not guessed at: the result is None with the reason, as
Hindsight answers when its extraction fails — the reflection itself stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.providers.llm import LanguageModel, LanguageModelError
from core.reflect.values import Reflection
from core.types import InvalidInputError

# Memories a text field is made of, offline.
TEXT_FACTS = 3
MAX_SCHEMA_DEPTH = 16


class Unfillable(Exception):
    """The rules cannot fill this part of the schema honestly."""


def check_schema(schema: Any) -> dict[str, Any]:
    """The schema, if it is a valid JSON Schema object; else InvalidInputError."""
    if not isinstance(schema, dict):
        raise InvalidInputError("response_schema must be a JSON Schema object")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise InvalidInputError(
            f"response_schema is not a valid JSON Schema: {error.message}"
        ) from None
    return schema


def structured_output(
    reflection: Reflection, schema: dict[str, Any], lm: LanguageModel | None
) -> tuple[dict[str, Any] | None, str | None]:
    """(the answer as a value fitting `schema`, None) or (None, why not)."""
    check_schema(schema)
    if lm is not None and not reflection.offline:
        try:
            return _with_model(reflection, schema, lm), None
        except LanguageModelError as error:
            return None, f"the language model gave no answer fitting the schema: {error}"
    try:
        value = _fill(schema, schema, _texts(reflection), "", 0)
    except Unfillable as why:
        return None, (
            "no language model answered (the reflection is extractive), and the rules "
            f"cannot fill the schema honestly: {why}"
        )
    problem = _problem(value, schema)
    if problem is not None:
        return None, f"the extractive answer does not fit the schema: {problem}"
    return value, None


def _problem(value: Any, schema: dict[str, Any]) -> str | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
    )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the value"
    return f"{where}: {error.message}"


def _with_model(reflection: Reflection, schema: dict[str, Any], lm: LanguageModel) -> Any:
    import json

    def validate(value: Any) -> Any:
        problem = _problem(value, schema)
        if problem is not None:
            raise ValueError(problem)
        return value

    prompt = (
        f"Question: {reflection.query}\n\nAnswer:\n{reflection.answer}\n\n"
        "Restate this answer as JSON fitting this JSON Schema, using only what the answer "
        f"says:\n{json.dumps(schema, ensure_ascii=False)}"
    )
    return lm.structured(
        "You turn an answer into JSON that fits a schema exactly.", prompt, schema, validate
    )


def _texts(reflection: Reflection) -> list[str]:
    """What an extractive answer has to offer: its evidence, most relevant first."""
    return [e.text for e in reflection.evidence if e.text.strip()]


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    if not ref.startswith("#/"):
        raise Unfillable(f"an external reference ({ref})")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        raise Unfillable(f"a reference that does not resolve ({ref})")
    return target


def _fill(node: Any, root: dict[str, Any], texts: Sequence[str], path: str, depth: int) -> Any:
    if depth > MAX_SCHEMA_DEPTH:
        raise Unfillable("a schema nested too deeply")
    if not isinstance(node, dict):
        raise Unfillable(f"{path or 'the value'} has no schema")
    node = _resolve(node, root)
    where = path or "the value"
    if "const" in node or "enum" in node:
        raise Unfillable(f"{where} is a choice between fixed values")
    for key in ("anyOf", "oneOf"):
        if key in node:
            for option in node[key]:
                try:
                    return _fill(option, root, texts, path, depth + 1)
                except Unfillable:
                    continue
            raise Unfillable(f"no option of {where} can be filled")
    if "allOf" in node and len(node["allOf"]) == 1:
        return _fill(node["allOf"][0], root, texts, path, depth + 1)
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds or (kind is None and "properties" in node):
        properties = node.get("properties") or {}
        out: dict[str, Any] = {}
        for name in node.get("required") or ():
            if name not in properties:
                raise Unfillable(f"{path}{name} is required but not described")
            out[name] = _fill(properties[name], root, texts, f"{path}{name}.", depth + 1)
        return out
    if "array" in kinds:
        items = node.get("items") or {}
        items = _resolve(items, root) if isinstance(items, dict) else items
        if not isinstance(items, dict) or "string" not in _types(items) or "enum" in items:
            raise Unfillable(f"{where.rstrip('.')} is a list of something other than text")
        least = int(node.get("minItems") or 0)
        most = node.get("maxItems")
        chosen = list(texts[: int(most)] if most is not None else texts)
        if len(chosen) < least:
            raise Unfillable(f"{where.rstrip('.')} needs {least} items; memory gave {len(chosen)}")
        return chosen
    if "string" in kinds:
        if node.get("format") or node.get("pattern"):
            raise Unfillable(f"{where.rstrip('.')} is text in a set format")
        text = " ".join(texts[:TEXT_FACTS]) or "Nothing in memory answers this."
        most = node.get("maxLength")
        return text[: int(most)] if most is not None else text
    if "null" in kinds:
        return None
    what = {"integer": "a number", "number": "a number", "boolean": "a yes or no"}.get(
        str(kinds[0]), f"a value of type {kinds[0]}"
    )
    raise Unfillable(f"{where.rstrip('.')} is {what}")


def _types(node: dict[str, Any]) -> list[Any]:
    kind = node.get("type")
    return kind if isinstance(kind, list) else [kind]
