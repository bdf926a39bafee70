"""Callback URLs: which may be called, and the one address a delivery connects to.

A URL is parsed once and its host resolved once (:func:`target`): at
submission, to refuse it there, and again at each delivery, which connects to
the address it has just checked (no second lookup, so DNS rebinding cannot
swap it).  Every spelling of an address is normalised before it is judged:
the IPv4 forms ``inet_aton`` takes (``2130706433``, ``0177.0.0.1``,
``0x7f.1``, ``127.1``, ``0``) and the IPv4 address inside an IPv6 one
(IPv4-mapped ``::ffff:a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``,
IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16`` and
both ends of Teredo ``2001::/32``).  An address that carries IPv4 addresses is
judged on them; any other on itself.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MAX_URL = 2048
#: Names refused whatever they resolve to (unless allowed by name).
LOCAL_NAMES = ("localhost", "*.localhost", "*.local", "*.internal", "metadata", "*.arpa")
#: IPv6 prefixes whose last 32 bits are an IPv4 address a packet reaches.
EMBEDDING = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated (RFC 2765)
        "::/96",  # IPv4-compatible (deprecated, RFC 4291)
        "64:ff9b::/96",  # NAT64, well-known prefix (RFC 6052)
    )
)
#: IPv6 networks never called however ``ipaddress`` rates them (local-use NAT64,
#: RFC 8215, embeds an IPv4 address where its operator chose).
NEVER = (ipaddress.IPv6Network("64:ff9b:1::/48"),)
#: What ``inet_aton`` may read as an IPv4 address: digits, dots and hex.
_INET_ATON = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)


class Refused(ValueError):
    """A callback URL that may not be called; the message says why."""


@dataclass
class Allow:
    """The parsed ``SCA_WEBHOOK_ALLOW``."""

    names: list = field(default_factory=list)
    networks: list = field(default_factory=list)

    @classmethod
    def parse(cls, text: str | None) -> Allow:
        allow = cls()
        for item in (text or "").split(","):
            item = item.strip().lower()
            if not item:
                continue
            try:
                allow.networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
            except ValueError:
                allow.names.append(item.rstrip("."))
        return allow

    def __bool__(self) -> bool:
        return bool(self.names or self.networks)

    def name_allowed(self, host: str) -> bool:
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self.names)

    def address_allowed(self, address) -> bool:
        """Whether the networks list ``address`` (or every IPv4 address inside it)."""
        address = parse_address(str(address))
        if self._listed(address):
            return True
        inner = embedded(address)
        return bool(inner) and all(self._listed(a) for a in inner)

    def _listed(self, address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)


def parse_address(text: str):
    """The address a host names literally (any IPv4 spelling, IPv6 without its
    zone), or None for a name."""
    text = text.strip("[]")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    if _INET_ATON.fullmatch(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            pass
    return None


def embedded(address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 ``address`` reaches (empty for any other)."""
    if address.version != 6:
        return []
    if address.teredo is not None:
        return list(address.teredo)
    if address.sixtofour is not None:
        return [address.sixtofour]
    if any(address in prefix for prefix in EMBEDDING):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []


def _public(address) -> bool:
    return (
        address.is_global
        and not address.is_multicast
        and not any(address.version == net.version and address in net for net in NEVER)
    )


def address_permitted(address, allow: Allow) -> bool:
    """Whether an address may be called: listed, or public (with every IPv4
    address inside it public)."""
    address = parse_address(str(address))
    if address is None:
        return False
    if allow.address_allowed(address):
        return True
    inner = embedded(address)
    return all(_public(a) for a in inner) if inner else _public(address)


def check_url(url, allow: Allow) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of a callback URL whose host, as written,
    may be called; :class:`Refused` otherwise.  A name is resolved by :func:`target`."""
    if not isinstance(url, str) or not url:
        raise Refused("must be an http or https URL")
    if len(url) > MAX_URL or any(ord(c) <= 32 or ord(c) == 127 for c in url):
        raise Refused(f"must be a URL of at most {MAX_URL} characters without spaces")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("must be an http or https URL")
    if parts.username is not None or parts.password is not None:
        raise Refused("must not carry credentials (sign with callback_secret instead)")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("has no host")
    port = port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    address = parse_address(host)
    if address is not None:
        if not address_permitted(address, allow):
            raise Refused(
                f"{host} is {address}: a loopback, private, link-local or reserved "
                f"address (not in SCA_WEBHOOK_ALLOW)"
            )
        if allow and not allow.address_allowed(address):
            raise Refused(f"{host} is not in SCA_WEBHOOK_ALLOW")
    elif allow:
        if not allow.name_allowed(host):
            raise Refused(f"{host} is not in SCA_WEBHOOK_ALLOW")
    elif any(fnmatch.fnmatchcase(host, pattern) for pattern in LOCAL_NAMES):
        raise Refused(f"{host} is a local name (not in SCA_WEBHOOK_ALLOW)")
    return parts.scheme, host, port, path


def resolve(host: str, port: int, allow: Allow) -> list[str]:
    """Every address of ``host`` now, each checked (:class:`Refused` when one may
    not be called: a name with a loopback answer is not trusted with the others)."""
    address = parse_address(host)
    if address is not None:
        addresses = [str(address)]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise Refused(f"{host} does not resolve ({exc})") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    refused = [a for a in addresses if not address_permitted(a, allow)]
    if refused or not addresses:
        raise Refused(
            f"{host} resolves to {', '.join(refused) or 'nothing'}: loopback, private, "
            f"link-local or reserved (not in SCA_WEBHOOK_ALLOW)"
        )
    return addresses


def target(url, allow: Allow) -> tuple[str, str, int, str, list[str]]:
    """``(scheme, host, port, path, addresses)`` of a callback URL: parsed, its host
    resolved once and every address checked (:class:`Refused` otherwise)."""
    scheme, host, port, path = check_url(url, allow)
    return scheme, host, port, path, resolve(host, port, allow)
