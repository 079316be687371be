"""What `web_fetch` may reach: the `[web]` configuration section (docs/configuration.md).

It lives in `core` because the settings (config) and the tool (tools) both read it and neither
may import the other. Host names are kept lowercased, without a leading `*.`: a domain covers
its subdomains. Networks are CIDR blocks, parsed once here so a typo is a configuration error
that names the key, not a failure at the first fetch.
"""

from __future__ import annotations

import ipaddress
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_HOST = re.compile(
    r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class WebAccess(BaseModel):
    """Where `web_fetch` may go and how much it may take (`web.*`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    allow_domains: list[str] = []
    """Only these hosts and their subdomains (`example.com` covers `docs.example.com`); empty:
    any host not denied."""
    deny_domains: list[str] = []
    """Never these hosts nor their subdomains; checked before `allow_domains`."""
    allow_private: bool = False
    """Reach loopback, link-local, private and other non-public addresses (off: refused, after
    DNS resolution and on every redirect, so no page can make blitz reach the user's own
    network)."""
    allow_networks: list[str] = []
    """Non-public networks reachable even with `allow_private` off, as CIDR blocks (an
    intranet's `10.20.0.0/16`)."""
    max_bytes: int = Field(default=2_000_000, ge=1_000, le=50_000_000)
    """The most of a response body that is read; the rest is not downloaded."""
    timeout_s: float = Field(default=20.0, gt=0, le=300)
    """The whole fetch, redirects included (and never past the turn's own deadline)."""
    max_redirects: int = Field(default=5, ge=0, le=10)
    """Redirects followed before the fetch gives up."""

    @field_validator("allow_domains", "deny_domains")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        hosts = []
        for raw in value:
            host = raw.strip().lower().removeprefix("*.").strip(".")
            if not _HOST.fullmatch(host) and not _is_address(host):
                raise ValueError(f"must be a host name such as example.com, not {raw!r}")
            hosts.append(host)
        return hosts

    @field_validator("allow_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for raw in value:
            try:
                ipaddress.ip_network(raw.strip(), strict=False)
            except ValueError:
                raise ValueError(f"must be a network such as 10.20.0.0/16, not {raw!r}") from None
        return [raw.strip() for raw in value]

    def networks(self) -> list[Network]:
        return [ipaddress.ip_network(raw, strict=False) for raw in self.allow_networks]


def host_matches(host: str, domains: list[str]) -> bool:
    """Whether `host` is one of `domains` or a subdomain of one."""
    return any(host == domain or host.endswith("." + domain) for domain in domains)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True
