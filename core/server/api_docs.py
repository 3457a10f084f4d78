"""The API's documentation in a browser: `/docs` (one HTML page) and `/openapi.json`.

A browser cannot send `Authorization: Bearer …` when a person types an address,
so these two answer without the token, to clients on this machine only: they
describe the API's shape, which is public (docs/openapi.json in the source),
and hold no bank, memory, name or token. Everything else still needs the token,
and a client on another machine still needs it for the docs too.

The page is rendered here from the OpenAPI document, as plain HTML with its
style inline: no script and nothing from a CDN, so it loads offline (FastAPI's
Swagger and ReDoc pages fetch their code from one, and are turned off).
"""

from __future__ import annotations

import html
import ipaddress
import json
from collections.abc import Callable
from typing import Any

DOCS_PATH = "/docs"
OPENAPI_PATH = "/openapi.json"
METHODS = ("get", "put", "post", "patch", "delete")
# The page runs no script and loads nothing; its only style is the inline sheet.
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class PublicDocs:
    """ASGI middleware outside the token check: GET/HEAD of /docs and /openapi.json
    from a loopback client are answered here; every other request goes on."""

    def __init__(self, app, openapi: Callable[[], dict]) -> None:
        self.app = app
        self.openapi = openapi
        self._pages: dict[str, bytes] = {}  # by address: the document does not change

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if (
            path in (DOCS_PATH, OPENAPI_PATH)
            and scope.get("method") in ("GET", "HEAD")
            and _from_loopback(scope)
        ):
            if path == DOCS_PATH:
                base = _base_url(scope)
                if base not in self._pages:
                    self._pages[base] = render_page(self.openapi(), base).encode()
                body, kind = self._pages[base], b"text/html; charset=utf-8"
            else:
                body, kind = json.dumps(self.openapi()).encode(), b"application/json"
            await _send(send, body, kind, head=scope["method"] == "HEAD")
            return
        await self.app(scope, receive, send)


def _from_loopback(scope) -> bool:
    client = scope.get("client")
    if not client:
        return False
    try:
        return ipaddress.ip_address(str(client[0]).strip("[]")).is_loopback
    except ValueError:
        return False


def _base_url(scope) -> str:
    """This server's own address, for the page's example (the port may be any)."""
    host, port = scope.get("server") or ("127.0.0.1", 8888)
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{port}"


async def _send(send, body: bytes, kind: bytes, *, head: bool) -> None:
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *HEADERS]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


# -- the page -----------------------------------------------------------------

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 2rem;
color:#1d2430;background:#fbfbfc}
h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:1px solid #d6dae1}
h3{font-size:1rem;margin:1.6rem 0 .3rem}
code,pre{font:13px/1.45 ui-monospace,monospace;background:#eef0f4;border-radius:3px}
code{padding:0 .25em}pre{padding:.6rem .8rem;overflow-x:auto}
.m{display:inline-block;min-width:4.2em;font-weight:600;text-transform:uppercase}
.get{color:#1a6a32}.post{color:#1b4f9c}.patch,.put{color:#8a5a00}.delete{color:#a11d1d}
table{border-collapse:collapse;margin:.3rem 0 .6rem}td,th{padding:.15rem .7rem .15rem 0;
text-align:left;vertical-align:top}th{font-weight:600;color:#4a5465}
.muted{color:#5c6678}nav a{display:block}a{color:#1b4f9c}
@media (prefers-color-scheme:dark){body{color:#dde2ea;background:#15181d}
code,pre{background:#232830}a,.post{color:#7fb0ff}.get{color:#6fd08f}h2{border-color:#2c323c}
th,.muted{color:#9aa4b4}}
"""


def render_page(document: dict, base_url: str = "http://127.0.0.1:8888") -> str:
    """The whole API on one page: how to authenticate, every operation (parameters,
    body, responses) grouped by tag, then every schema they name."""
    info = document.get("info", {})
    title = _e(info.get("title", "API"))
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                operation = item[method]
                tag = (operation.get("tags") or [_area(path)])[0]
                groups.setdefault(tag, []).append((method, path, operation))
    schemas = document.get("components", {}).get("schemas", {})
    parts = [
        "<!doctype html><html lang=en><meta charset=utf-8>",
        '<meta name=viewport content="width=device-width,initial-scale=1">',
        f"<title>{title}</title><style>{STYLE}</style>",
        f"<h1>{title} <span class=muted>{_e(info.get('version', ''))}</span></h1>",
        f"<p>{_e(info.get('description', ''))}</p>",
        "<p>Every operation needs the bearer token; it is in the data folder's "
        "<code>api-token</code> file (owner-only), or <code>ENGRAM_API_TOKEN</code> "
        "when that is set:</p>",
        '<pre>curl -H "Authorization: Bearer $(cat DATA_FOLDER/api-token)" '
        f"{_e(base_url)}/v1/default/banks</pre>",
        f'<p>The machine-readable document: <a href="{OPENAPI_PATH}">{OPENAPI_PATH}</a> '
        "(OpenAPI 3). MCP (streamable HTTP) is at <code>/mcp</code>.</p>",
        "<nav><h2>Contents</h2>",
        *(f'<a href="#{_anchor("tag", tag)}">{_e(tag)}</a>' for tag in groups),
        '<a href="#schemas">Schemas</a></nav>' if schemas else "</nav>",
    ]
    for tag, operations in groups.items():
        parts.append(f'<h2 id="{_anchor("tag", tag)}">{_e(tag)}</h2>')
        parts.extend(_operation(method, path, op) for method, path, op in operations)
    if schemas:
        parts.append('<h2 id="schemas">Schemas</h2>')
        parts.extend(_schema(name, schema) for name, schema in schemas.items())
    return "\n".join(parts) + "\n</html>\n"


def _area(path: str) -> str:
    if path.startswith("/engram/"):
        return "Engram"
    return "Hindsight-compatible" if path.startswith("/v1/") else "Other"


def _operation(method: str, path: str, operation: dict) -> str:
    parts = [
        f'<h3 id="{_anchor("op", method + path)}"><span class="m {method}">{method}</span> '
        f"<code>{_e(path)}</code></h3>"
    ]
    if operation.get("summary"):
        parts.append(f"<div>{_e(operation['summary'])}</div>")
    if operation.get("description"):
        parts.append(f"<p class=muted>{_e(operation['description'])}</p>")
    parameters = operation.get("parameters") or []
    if parameters:
        rows = "".join(
            f"<tr><td><code>{_e(p.get('name', ''))}</code></td><td>{_e(p.get('in', ''))}"
            f"{' · required' if p.get('required') else ''}</td>"
            f"<td>{_type(p.get('schema', {}))}</td><td>{_e(p.get('description', ''))}</td></tr>"
            for p in parameters
        )
        parts.append(f"<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>{rows}</table>")
    body = operation.get("requestBody")
    if body:
        kinds = body.get("content", {})
        parts.append(
            "<div>body: "
            + ", ".join(f"{_type(c.get('schema', {}))} <span class=muted>({_e(k)})</span>"
                        for k, c in kinds.items())
            + "</div>"
        )  # fmt: skip
    responses = operation.get("responses") or {}
    if responses:
        rows = "".join(
            f"<tr><td>{_e(code)}</td><td>{_e(r.get('description', ''))}</td><td>"
            + ", ".join(_type(c.get("schema", {})) for c in r.get("content", {}).values())
            + "</td></tr>"
            for code, r in responses.items()
        )
        parts.append(f"<table><tr><th>status</th><th></th><th></th></tr>{rows}</table>")
    return "\n".join(parts)


def _schema(name: str, schema: dict) -> str:
    parts = [f'<h3 id="{_anchor("schema", name)}"><code>{_e(name)}</code></h3>']
    if schema.get("description"):
        parts.append(f"<p class=muted>{_e(schema['description'])}</p>")
    properties = schema.get("properties") or {}
    if properties:
        required = set(schema.get("required") or [])
        rows = "".join(
            f"<tr><td><code>{_e(field)}</code>{' · required' if field in required else ''}</td>"
            f"<td>{_type(spec)}{_limits(spec)}</td><td>{_e(spec.get('description', ''))}</td></tr>"
            for field, spec in properties.items()
        )
        parts.append(f"<table>{rows}</table>")
    else:
        parts.append(f"<div>{_type(schema)}{_limits(schema)}</div>")
    return "\n".join(parts)


def _type(schema: Any) -> str:
    """A schema as a short type: `array of Unit`, `string | null`, `one of a, b`."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return f'<a href="#{_anchor("schema", name)}">{_e(name)}</a>'
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            joiner = " &amp; " if key == "allOf" else " | "
            return joiner.join(_type(s) for s in schema[key])
    if "enum" in schema:
        return "one of " + ", ".join(f"<code>{_e(json.dumps(v))}</code>" for v in schema["enum"])
    if "const" in schema:
        return f"<code>{_e(json.dumps(schema['const']))}</code>"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    text = _e(kind if isinstance(kind, str) else " | ".join(map(str, kind)))
    return f"{text} ({_e(schema['format'])})" if schema.get("format") else text


LIMITS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matching {}"),
    ("default", "default {}"),
)


def _limits(schema: dict) -> str:
    said = [
        form.format(json.dumps(schema[key]) if key in ("default", "pattern") else schema[key])
        for key, form in LIMITS
        if key in schema
    ]
    return f" <span class=muted>({_e(', '.join(said))})</span>" if said else ""


def _anchor(kind: str, name: str) -> str:
    return kind + "-" + "".join(c if c.isalnum() else "-" for c in name)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
