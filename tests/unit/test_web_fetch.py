"""`web_fetch` against a real local HTTP server: readable text, redirects (a loop, too many,
one to a private address), size and time caps, non-HTML, nothing of the user's sent, the
address checks after DNS resolution, the domain lists, and the approvals (docs/tools.md)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.web_access import WebAccess
from blitz_kernel.errors import ConfigError
from blitz_kernel.tools.registry import ToolContext, ToolError
from blitz_kernel.tools.web import web_fetch
from tests.helpers.workspaces import scripted_workspace

from .conftest import call, tool_results, tool_step

ARTICLE = (
    "<!doctype html><html><head><title>Pandas notes</title><script>var tracking = 1;</script></head>"
    "<body><nav>Home | About | Login</nav><article><h1>Reading CSV files</h1>"
    "<p>Use <code>pandas.read_csv</code> to load a CSV file into a data frame; it infers the column types.</p>"
    "<p>See the <a href='https://pandas.pydata.org/docs/'>pandas documentation</a> for every option.</p>"
    "</article><footer>Copyright 2026</footer></body></html>"
)
SECRET = "sk-proj" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Site:
    """What the server was asked, and a gate the slow page waits on until the test ends."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.release = threading.Event()
        self.huge_sent = 0
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


PAGES = {
    "/page": (200, ARTICLE.encode(), "text/html; charset=utf-8"),
    "/image": (200, b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png"),
    "/notes.txt": (200, "plain notes: é".encode("latin-1"), "text/plain; charset=latin-1"),
    "/secret": (200, f"<html><body><p>The key is {SECRET} in the docs.</p></body></html>".encode(), "text/html"),
    "/missing": (404, b"nope", "text/plain"),
}
MOVED = {
    "/loop/a": "/loop/b",
    "/loop/b": "{base}/loop/a",
    "/to-private": "http://169.254.169.254/latest/meta-data/",
}


class Handler(BaseHTTPRequestHandler):
    site: Site

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, media: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str, **headers: str) -> None:
        self._send(302, b"", "text/plain", Location=location, **headers)

    def do_GET(self) -> None:
        self.site.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        path = self.path
        if path in PAGES:
            self._send(*PAGES[path])
        elif path in MOVED:
            self._redirect(MOVED[path].format(base=self.site.base))
        elif path.startswith("/hops/"):
            left = int(path.rsplit("/", 1)[1])
            self._redirect(f"/hops/{left - 1}" if left > 1 else "/page")
        elif path == "/cookie":
            self._redirect("/echo", Set_Cookie="session=s3cr3t; Path=/")
        elif path == "/echo":
            self._send(200, json.dumps(sorted(self.site.requests[-1][1])).encode(), "application/json")
        elif path in ("/huge", "/slow"):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self._huge() if path == "/huge" else self._slow()
        else:
            self._send(500, b"unexpected", "text/plain")

    def _huge(self) -> None:
        chunk = b"x" * 65536
        try:
            for _ in range(800):  # 50 MB, unless the client stops reading
                self.wfile.write(chunk)
                self.site.huge_sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _slow(self) -> None:
        self.wfile.write(b"the beginning")
        self.wfile.flush()
        self.site.release.wait(30)  # the body never finishes while the test runs


@pytest.fixture
def site() -> Iterator[Site]:
    state = Site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("SiteHandler", (Handler,), {"site": state}))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


LOCAL = WebAccess(allow_networks=["127.0.0.1/32"])
"""The test server's address is loopback: these tests let exactly it through."""


async def fetch(url: str, access: WebAccess = LOCAL, max_chars: int = 20_000, deadline: float | None = None) -> str:
    arguments = web_fetch.parse_arguments(json.dumps({"url": url, "max_chars": max_chars}))
    return await web_fetch.func(arguments, ToolContext(Path("."), web=access, deadline=deadline))  # type: ignore[return-value]


async def refused(url: str, access: WebAccess = LOCAL, **kwargs: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await fetch(url, access, **kwargs)
    return str(caught.value)


async def test_html_becomes_readable_text_with_its_links(site: Site):
    text = await fetch(f"{site.base}/page")
    assert text.startswith(f"{site.base}/page (text/html, HTTP 200)")
    assert "pandas.read_csv" in text and "[pandas documentation](https://pandas.pydata.org/docs/)" in text
    assert "var tracking" not in text and "<p>" not in text


async def test_a_few_redirects_are_followed_and_named(site: Site):
    text = await fetch(f"{site.base}/hops/3")
    assert text.startswith(f"{site.base}/page (text/html, HTTP 200, after 3 redirects)")
    assert "pandas.read_csv" in text


async def test_too_many_redirects_and_a_redirect_loop_end_with_one_line(site: Site):
    too_many = await refused(f"{site.base}/hops/9")
    assert too_many == f"{site.base}/hops/9 redirects more than 5 times (web.max_redirects)"
    assert len(site.requests) == 6  # the first request and five redirects, no more
    loop = await refused(f"{site.base}/loop/a")
    assert loop == f"redirect loop: {site.base}/loop/b leads back to {site.base}/loop/a"


async def test_a_redirect_to_a_private_address_is_refused_before_it_is_made(site: Site):
    message = await refused(f"{site.base}/to-private")
    assert message.startswith("169.254.169.254 is a link-local address: web_fetch reaches public addresses only")
    assert [path for path, _ in site.requests] == ["/to-private"]


async def test_a_name_is_checked_after_dns_resolution(site: Site):
    """localhost resolves to loopback: refused although the name itself looks harmless."""
    message = await refused(f"http://localhost:{site.port}/page", WebAccess())
    assert re.match(r"localhost resolves to (127\.0\.0\.1|::1), is a loopback address", message), message
    assert site.requests == []


async def test_loopback_and_private_addresses_are_refused_by_default(site: Site):
    for url in (f"{site.base}/page", "http://10.0.0.1/", "http://[::1]/", "http://192.168.1.1/", "http://0.0.0.0/"):
        assert "web_fetch reaches public addresses only (web.allow_private, web.allow_networks)" in await refused(
            url, WebAccess()
        )
    assert site.requests == []
    assert "HTTP 200" in await fetch(f"{site.base}/page", WebAccess(allow_private=True))


async def test_only_http_and_https_and_no_credentials_in_the_address(site: Site):
    assert "http:// and https:// addresses only, not file" in await refused("file:///etc/passwd")
    assert "not ftp" in await refused("ftp://example.com/x")
    assert "user name or password" in await refused(f"http://me:pw@127.0.0.1:{site.port}/page")
    assert site.requests == []


async def test_no_cookie_and_no_credentials_are_sent(site: Site):
    text = await fetch(f"{site.base}/cookie")
    headers = json.loads(text.split("\n\n", 1)[1])
    assert "cookie" not in headers and "authorization" not in headers  # the cookie the first hop set stays
    assert headers == sorted(["host", "user-agent", "accept", "accept-encoding", "connection"])
    assert site.requests[-1][1]["host"] == f"127.0.0.1:{site.port}"


async def test_a_huge_body_is_cut_at_max_bytes_and_not_downloaded(site: Site):
    text = await fetch(f"{site.base}/huge", WebAccess(allow_networks=["127.0.0.1/32"], max_bytes=5_000), max_chars=300)
    assert "[the page is longer than web.max_bytes (5000 bytes): only its beginning was read]" in text
    assert "[4700 more characters not shown; call again with a larger max_chars]" in text
    assert site.huge_sent < 50 * 1024 * 1024  # the client stopped reading


async def test_a_slow_body_ends_at_the_timeout_and_at_the_turns_deadline(site: Site):
    started = time.monotonic()
    message = await refused(f"{site.base}/slow", WebAccess(allow_networks=["127.0.0.1/32"], timeout_s=0.5))
    assert message == f"{site.base}/slow did not answer in full within 0.5 s (web.timeout_s)"
    assert time.monotonic() - started < 5
    started = time.monotonic()
    message = await refused(f"{site.base}/slow", deadline=time.monotonic() + 0.5)
    assert "did not answer in full within" in message and time.monotonic() - started < 5


async def test_non_html_text_comes_as_it_is_and_binary_is_refused(site: Site):
    assert (await fetch(f"{site.base}/notes.txt")).endswith("plain notes: é")
    image = await refused(f"{site.base}/image")
    assert image == f"{site.base}/image is image/png (208 bytes read), not a page: web_fetch reads HTML and text only"
    assert await refused(f"{site.base}/missing") == f"{site.base}/missing answered HTTP 404 Not Found"


async def test_the_domain_lists(site: Site):
    denied = WebAccess(allow_private=True, deny_domains=["*.Local.Test", "127.0.0.1"])
    assert await refused(f"{site.base}/page", denied) == "127.0.0.1 is in web.deny_domains"
    assert await refused("http://docs.local.test/", denied) == "docs.local.test is in web.deny_domains"
    allowed = WebAccess(allow_private=True, allow_domains=["example.com"])
    assert await refused(f"{site.base}/page", allowed) == "127.0.0.1 is not in web.allow_domains (example.com)"
    assert site.requests == []


def test_web_settings_are_checked_when_the_configuration_loads(tmp_path: Path):
    with pytest.raises(ConfigError, match="web.allow_domains") as caught:
        scripted_workspace(tmp_path, [], **{"web.allow_domains": ["https://example.com/docs"]})
    assert "must be a host name such as example.com" in str(caught.value)
    with pytest.raises(ConfigError, match="web.allow_networks"):
        scripted_workspace(tmp_path, [], **{"web.allow_networks": ["10.0.0.0/33"]})


async def test_headless_it_is_refused_unless_allowed_and_what_comes_back_is_redacted(site: Site, tmp_path: Path):
    steps = [tool_step(call("web_fetch", url=f"{site.base}/secret")), {"text": "done"}]
    ws, model = scripted_workspace(tmp_path, list(steps), **{"web.allow_networks": ["127.0.0.1/32"]})
    await ws.run("read it", session="s")
    [denied] = tool_results(model.requests[1])
    assert denied.error is not None and "nobody can answer (headless)" in denied.error
    assert site.requests == []  # asked, nobody there: not fetched

    allowed, model = scripted_workspace(
        tmp_path / "allowed",
        list(steps),
        **{"web.allow_networks": ["127.0.0.1/32"], "approval.tools": {"web_fetch": "allow"}},
    )
    await allowed.run("read it", session="s")
    [result] = tool_results(model.requests[1])
    assert result.output is not None and "The key is" in result.output
    assert SECRET not in result.output and SECRET not in json.dumps(
        [r.model_dump(mode="json") for r in allowed.audit("s")]
    )


def test_a_cloned_repositorys_web_table_waits_for_trust(tmp_path: Path):
    """A repository must not open the user's own network to the agent."""
    (tmp_path / "blitz.toml").write_text('[web]\nallow_private = true\nallow_networks = ["10.0.0.0/8"]\n')
    ws, _ = scripted_workspace(tmp_path, [])
    assert ws.config.web == WebAccess()
    trusted, _ = scripted_workspace(tmp_path, [], **{"web.allow_private": True})  # the user's own say
    assert trusted.config.web.allow_private


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::a00:1",
        "2002:a00:1::1",
        "::7f00:1",
        "::ffff:0:7f00:1",
        "fec0::1",
        "::ffff:10.0.0.1",
    ],
)
def test_ipv6_forms_that_carry_a_private_ipv4_address_are_refused(address):
    """NAT64, 6to4, IPv4-compatible, SIIT and site-local addresses look global to Python 3.11's
    `is_global` but reach the user's own network."""
    from blitz_kernel.core.web_access import WebAccess
    from blitz_kernel.tools.web import address_refusal

    assert address_refusal(address, WebAccess()) is not None
    assert address_refusal("2606:4700:4700::1111", WebAccess()) is None  # a public IPv6 resolver
