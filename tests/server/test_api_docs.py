"""`/docs` in a browser on this machine: no token to paste, nothing from a CDN, no
script; the token still guards everything else, and the docs beyond loopback."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from starlette.testclient import TestClient

from core import Engine
from core.server import ServedBanks
from core.server.app import create_app

TOKEN = "docs-token-" + "y" * 20
LOOPBACK = ("127.0.0.1", 50000)
ELSEWHERE = ("203.0.113.7", 50000)  # a documentation address: some other machine


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with Engine(tmp_path_factory.mktemp("home")) as engine:
        yield create_app(ServedBanks(engine, open_on_demand=True), TOKEN, mcp=False)


def browser(app, client=LOOPBACK) -> TestClient:
    """What a browser sends: no Authorization header."""
    return TestClient(app, client=client)


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)
            if name == "id":
                self.ids.add(value)


def test_a_browser_on_loopback_reads_the_docs_without_a_token(app):
    page = browser(app).get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    links = Links()
    links.feed(page.text)
    assert "script" not in links.tags
    # Nothing is fetched from anywhere: links go to this page's anchors or to /openapi.json.
    assert all(u.startswith("#") or u == "/openapi.json" for u in links.urls), links.urls
    assert {u[1:] for u in links.urls if u.startswith("#")} <= links.ids  # none dangles
    document = app.openapi()
    assert len(document["paths"]) > 20
    for path in ("/v1/default/banks/{bank_id}/memories/recall", "/engram/v1/banks/{bank_id}/recall"):
        assert f"<code>{path}</code>" in page.text
    assert "Authorization: Bearer" in page.text and "api-token" in page.text
    assert "http://testserver:80/v1/default/banks</pre>" in page.text  # its own address
    assert TOKEN not in page.text


def test_the_openapi_document_is_served_without_a_token_on_loopback(app):
    answer = browser(app).get("/openapi.json")
    assert answer.status_code == 200 and answer.json() == app.openapi()
    assert browser(app).head("/docs").status_code == 200


def test_the_token_still_guards_the_api_and_the_docs_beyond_loopback(app):
    assert browser(app).get("/v1/default/banks").status_code == 401
    assert browser(app).post("/docs").status_code == 401  # only reading is open
    assert browser(app).get("/docs/../v1/default/banks").status_code == 401
    for path in ("/docs", "/openapi.json"):
        assert browser(app, ELSEWHERE).get(path).status_code == 401
    with_token = browser(app, ELSEWHERE)
    with_token.headers["Authorization"] = f"Bearer {TOKEN}"
    assert with_token.get("/openapi.json").status_code == 200
    assert with_token.get("/v1/default/banks").status_code == 200


def test_the_cdn_pages_are_gone(app):
    for path in ("/redoc", "/docs/oauth2-redirect"):
        answer = TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}).get(path)
        assert answer.status_code == 404
        assert not re.search(r"cdn\.jsdelivr|unpkg", answer.text)
