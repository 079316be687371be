"""`web_fetch`: one web page, as readable text (docs/tools.md).

Reading a page reaches the network, so the tool is of the kind that asks (like an MCP tool):
`ask` by default, refused in plan and read-only modes, and headless it is denied unless a
policy allows it (`approval.tools.web_fetch = "allow"`). What it may reach is `web.*`
(core/web_access.py). Nothing of the user's goes out and nothing inside their network is
reached:

- only `http://` and `https://`, never an address with a user name or password in it; a fresh
  client per fetch that keeps no cookies, reads no proxy or `.netrc` from the environment
  (`trust_env` off) and sends no `Authorization` header;
- every hop (the first request and each redirect) is checked before it is made: the scheme,
  the domain lists, and every address the host resolves to (loopback, link-local, private and
  other non-public addresses are refused unless `web.allow_private` or `web.allow_networks`
  lets them). The connection then goes to the address that was checked, the host name riding
  in `Host` and in TLS's SNI, so a DNS answer that changes between the check and the connect
  cannot lead it elsewhere;
- at most `web.max_redirects` redirects (a loop is named), `web.max_bytes` of body (the rest is
  never downloaded) and `web.timeout_s` in all, never past the turn's own deadline;
- an https certificate must verify for the host name, against certifi's CA bundle, or the
  bundle `SSL_CERT_FILE` (or the folder `SSL_CERT_DIR`) names, as for httpx and OpenSSL's own
  tools: that is how a network that inspects TLS with its own CA is reached. Only that is read
  from the environment (no proxy settings); a certificate that does not verify is one line
  naming the host.

HTML becomes readable text with trafilatura (the page's main content as Markdown, links
kept; all of its text when no main content stands out); other text types come as they are,
anything else is refused. What comes back is redacted by the engine like every tool result.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
import time
from dataclasses import dataclass

import httpx
from pydantic import BaseModel, Field

from ..core.web_access import WebAccess, host_matches
from .registry import Tool, ToolContext, ToolError, ToolKind, tool

DEFAULT_CHARS = 20_000
MAX_CHARS = 100_000
REDIRECTS = frozenset({301, 302, 303, 307, 308})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript", "application/x-ndjson"})
USER_AGENT = "blitz-kernel web_fetch (+https://github.com/blitz-kernel)"
HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
}


class WebFetchArgs(BaseModel):
    url: str = Field(description="the page's address, http:// or https://")
    max_chars: int = Field(
        default=DEFAULT_CHARS, ge=200, le=MAX_CHARS, description="the most characters of the page's text to return"
    )


@dataclass(frozen=True)
class Hop:
    """One request to make: the address as the model gave it, and the checked IP to connect to."""

    url: httpx.URL
    host: str
    address: str


@dataclass
class Page:
    url: httpx.URL
    status: int
    media_type: str
    charset: str | None
    body: bytes
    cut: bool
    """The body was longer than `web.max_bytes`: only its beginning was read."""
    redirects: int


@tool("web_fetch", ToolKind.MUTATING, WebFetchArgs)
async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> str:
    """Fetch a web page (http or https) and return its readable text (HTML as Markdown, other
    text as it is). Public addresses only; it follows a few redirects and reads at most a few
    MB. Use it to read documentation, an API reference or an article the user points to."""
    access = ctx.web
    limit = access.timeout_s
    if ctx.deadline is not None:
        limit = min(limit, ctx.deadline - time.monotonic())
        if limit <= 0:
            raise ToolError("the turn's time is up; no page was fetched")
    try:
        async with asyncio.timeout(limit):
            page = await fetch(args.url, access)
            text = await asyncio.to_thread(page_text, page)
    except TimeoutError:
        raise ToolError(f"{args.url} did not answer in full within {limit:g} s (web.timeout_s)") from None
    return shown(page, text, args.max_chars, access)


async def fetch(url: str, access: WebAccess) -> Page:
    """GET `url`, following redirects by hand so that each hop is checked before it is made."""
    hop = await check_hop(url, access)  # a refused address costs no client
    seen = {str(hop.url)}
    verify = trusted_roots()
    async with httpx.AsyncClient(
        trust_env=False, follow_redirects=False, timeout=access.timeout_s, verify=verify
    ) as client:
        for redirects in range(access.max_redirects + 1):
            client.cookies.clear()  # a cookie one hop set is never sent on the next
            try:
                page = await _get(client, hop, access, redirects)
            except httpx.TimeoutException:
                raise ToolError(f"{hop.url} did not answer in time (web.timeout_s)") from None
            except httpx.HTTPError as exc:
                refused = _certificate_refusal(exc)
                if refused is not None:
                    raise ToolError(f"the certificate of {hop.host} does not verify: {refused}") from None
                raise ToolError(f"cannot fetch {hop.url}: {type(exc).__name__}: {exc}") from None
            if isinstance(page, Page):
                return page
            following = str(hop.url.join(page))
            if following in seen:
                raise ToolError(f"redirect loop: {hop.url} leads back to {following}")
            if redirects == access.max_redirects:
                break
            hop = await check_hop(following, access)
            seen.add(str(hop.url))
    raise ToolError(f"{url} redirects more than {access.max_redirects} times (web.max_redirects)")


def trusted_roots() -> ssl.SSLContext | bool:
    """The CAs https certificates are checked against: `SSL_CERT_FILE` / `SSL_CERT_DIR` when
    set (as httpx reads them, which `trust_env=False` turns off along with the proxies), else
    httpx's default, certifi's bundle. A bundle that cannot be read is one line naming it."""
    cafile, capath = os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        return True
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError) as exc:
        named = f"SSL_CERT_FILE={cafile}" if cafile else f"SSL_CERT_DIR={capath}"
        raise ToolError(f"cannot read the CA certificates of {named}: {exc}") from None


def _certificate_refusal(exc: BaseException) -> str | None:
    """Why TLS refused the server's certificate ("self-signed certificate"), if that is what
    failed; the SSL error sits a few causes down the httpx error."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        if isinstance(current, ssl.SSLCertVerificationError):
            reason = current.verify_message or current.reason or str(current)
            return f"{reason} (checked against certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR)"
        current = current.__cause__ or current.__context__
    return None


async def _get(client: httpx.AsyncClient, hop: Hop, access: WebAccess, redirects: int) -> Page | str:
    """The page, or the Location a redirect points to."""
    target = hop.url.copy_with(host=hop.address)
    default_port = {"http": 80, "https": 443}[hop.url.scheme]
    port = hop.url.port
    headers = {**HEADERS, "Host": hop.host if port in (None, default_port) else f"{hop.host}:{port}"}
    extensions = {"sni_hostname": hop.host} if hop.url.scheme == "https" else {}
    async with client.stream("GET", target, headers=headers, extensions=extensions) as response:
        location = response.headers.get("location")
        if response.status_code in REDIRECTS and location:
            return location
        if response.status_code >= 400:
            raise ToolError(f"{hop.url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip())
        body = bytearray()
        cut = False
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > access.max_bytes:
                del body[access.max_bytes :]
                cut = True
                break
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        return Page(hop.url, response.status_code, media, response.charset_encoding, bytes(body), cut, redirects)


async def check_hop(url: str, access: WebAccess) -> Hop:
    """The hop to `url` if `web.*` lets it be made; ToolError saying why not otherwise."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(f"not a web address: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"web_fetch reads http:// and https:// addresses only, not {parsed.scheme or 'this'}: {url}")
    if parsed.userinfo:
        raise ToolError("the address carries a user name or password; web_fetch sends no credentials")
    host = parsed.raw_host.decode("ascii").lower().strip("[]").rstrip(".")
    if not host:
        raise ToolError(f"the address names no host: {url}")
    if host_matches(host, access.deny_domains):
        raise ToolError(f"{host} is in web.deny_domains")
    if access.allow_domains and not host_matches(host, access.allow_domains):
        raise ToolError(f"{host} is not in web.allow_domains ({', '.join(access.allow_domains)})")
    addresses = await resolve(host, parsed.port or (443 if parsed.scheme == "https" else 80))
    for address in addresses:
        refusal = address_refusal(address, access)
        if refusal is not None:
            shown_host = host if host == address else f"{host} resolves to {address},"
            raise ToolError(
                f"{shown_host} {refusal}: web_fetch reaches public addresses only "
                "(web.allow_private, web.allow_networks)"
            )
    return Hop(parsed, host, addresses[0])


async def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (itself when it is an address)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolError(f"cannot resolve {host}: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise ToolError(f"cannot resolve {host}: no address")
    return addresses


EMBEDDING_NETWORKS = tuple(
    ipaddress.IPv6Network(network)
    for network in ("64:ff9b::/96", "64:ff9b:1::/48", "::/96", "::ffff:0:0:0/96", "fec0::/10")
)
"""IPv6 forms that carry or route to an IPv4 address (NAT64, IPv4-compatible, SIIT) and the
old site-local range: a global-looking IPv6 address must not reach a private IPv4 host."""


def embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4, IPv4-compatible,
    SIIT), checked in its place; site-local IPv6 becomes an address no rule allows."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in network for network in EMBEDDING_NETWORKS):
        if ip in EMBEDDING_NETWORKS[-1]:  # fec0::/10, deprecated site-local: never global
            return ipaddress.IPv4Address("10.0.0.0")
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_refusal(address: str, access: WebAccess) -> str | None:
    """Why `address` may not be reached ('is a loopback address'), or None."""
    ip = embedded_ipv4(ipaddress.ip_address(address.split("%")[0]))
    if ip.is_global and not ip.is_multicast:
        return None
    if access.allow_private or any(ip in network for network in access.networks() if ip.version == network.version):
        return None
    kind = (
        "loopback"
        if ip.is_loopback
        else "link-local"
        if ip.is_link_local
        else "private"
        if ip.is_private
        else "multicast"
        if ip.is_multicast
        else "non-public"
    )
    return f"is a {kind} address"


def page_text(page: Page) -> str:
    """The page as text: HTML through trafilatura, other text decoded; anything else refused."""
    media = page.media_type or _sniffed(page.body)
    if media in HTML_TYPES:
        return readable(page.body, str(page.url))
    if media.startswith("text/") or media in TEXT_TYPES or media.endswith(("+json", "+xml")):
        return _decoded(page.body, page.charset)
    raise ToolError(
        f"{page.url} is {media or 'binary data'} ({len(page.body)} bytes read), not a page: "
        "web_fetch reads HTML and text only"
    )


def readable(html: bytes, url: str) -> str:
    """The main content as Markdown (links and tables kept); all the text when trafilatura
    finds no main content (a short page, a list of links)."""
    import trafilatura  # noqa: PLC0415 - a second to import: only once a page is fetched

    text = trafilatura.extract(
        html, url=url, output_format="markdown", include_links=True, include_tables=True, favor_recall=True
    )
    return text or trafilatura.html2txt(html) or ""


def shown(page: Page, text: str, max_chars: int, access: WebAccess) -> str:
    """What the model reads: where the text came from, the text, and what was left out."""
    head = f"{page.url} ({page.media_type or 'no content type'}, HTTP {page.status}"
    head += f", after {page.redirects} redirect{'s' if page.redirects > 1 else ''})" if page.redirects else ")"
    notes = []
    if page.cut:
        notes.append(f"[the page is longer than web.max_bytes ({access.max_bytes} bytes): only its beginning was read]")
    if len(text) > max_chars:
        notes.append(f"[{len(text) - max_chars} more characters not shown; call again with a larger max_chars]")
        text = text[:max_chars]
    return "\n\n".join([head, text.strip() or "(the page has no text)", *notes])


def _sniffed(body: bytes) -> str:
    start = body[:512].lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html")) or b"<body" in start:
        return "text/html"
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return ""
    return "text/plain"


def _decoded(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


WEB_TOOLS: list[Tool] = [web_fetch]
