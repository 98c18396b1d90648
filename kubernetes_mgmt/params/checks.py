"""What individual request strings must look like.

Each check takes a non-empty string and returns ``None`` when it is fine or
a message saying what is wrong and what is expected.  Values that end up in
remote shell commands (paths, user names, resource names) are held to a
strict character set, so quoting mistakes elsewhere cannot turn a request
into a command injection.  Messages never echo passwords or proxy URLs
(which may carry credentials).
"""
from __future__ import annotations

import ipaddress
import posixpath
import re

from kubernetes_mgmt.params.paths import show

# C0/C1 controls plus the Unicode line/paragraph separators: anything that
# could split a log line or a shell command.
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')
_SHELL_META = frozenset(' `$&|;<>(){}[]*?!~\'"\\#')

_RESOURCE_NAME = re.compile(r'[A-Za-z0-9_.-]{1,255}')
_USER_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_-]{0,31}')
_PATH_PART = re.compile(r'[A-Za-z0-9._+@%=,-]+')
_PYTHON_CLASS = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_CIDR_SHAPE = re.compile(r'[0-9A-Fa-f:.]+/[0-9]{1,3}')
_ADDRESS_SHAPE = re.compile(r'[0-9A-Fa-f:.]+')
_LABEL = r'[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?'
_HOST_NAME = re.compile(rf'{_LABEL}(?:\.{_LABEL})*\.?')
_NO_PROXY_DOMAIN = re.compile(rf'(?:\*\.|\.)?{_LABEL}(?:\.{_LABEL})*'
                              r'(?::[0-9]{1,5})?')
# Characters RFC 3986 allows in a URL (percent-escapes included).
_URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")
_URL = re.compile(r'(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://'
                  r'(?P<netloc>[^/?#]*)(?P<rest>[/?#].*)?')
_PROXY_SCHEMES = ('http', 'https', 'socks4', 'socks5', 'socks5h')
# Placeholders such as ``host1:port1`` in the user guide must pass, so the
# port is any word, not only digits.
_PORT = re.compile(r'[A-Za-z0-9_-]+')

CONTROL_MESSAGE = 'must not contain control characters (newline, tab, NUL...)'


def has_control(value: str) -> bool:
    return _CONTROL.search(value) is not None


def _unsafe(value: str) -> str | None:
    """Message if ``value`` could break a log line or a shell command."""
    if has_control(value):
        return CONTROL_MESSAGE
    found = sorted({c for c in value if c in _SHELL_META})
    if found:
        listed = ' '.join(repr(c) for c in found)
        return ('must not contain spaces or shell metacharacters (found '
                f'{listed})')
    return None


def resource_name(value: str) -> str | None:
    """Heat resource names: ports, aspects, volumes, floating IPs."""
    problem = _unsafe(value)
    if problem:
        return problem
    if not _RESOURCE_NAME.fullmatch(value):
        return (f'{show(value)} is not a valid resource name (up to 255 '
                "letters, digits, '_', '-' or '.')")
    return None


def user_name(value: str) -> str | None:
    problem = _unsafe(value)
    if problem:
        return problem
    if not _USER_NAME.fullmatch(value):
        return (f'{show(value)} is not a valid user name (a letter or '
                "'_', then up to 31 letters, digits, '_' or '-')")
    return None


def password(value: str) -> str | None:
    # Sent as data over SSH, never through a shell: any printable
    # character is fine, but a newline would end the password prompt.
    return CONTROL_MESSAGE if has_control(value) else None


def vim_name(value: str) -> str | None:
    if has_control(value):
        return CONTROL_MESSAGE
    if not value.strip():
        return 'must not be blank'
    return None


def python_class(value: str) -> str | None:
    if not _PYTHON_CLASS.fullmatch(value):
        return f'{show(value)} is not a valid Python class name'
    return None


def package_path(value: str) -> str | None:
    """A file inside the VNF package: relative, normalized, no ``..``."""
    if has_control(value):
        return CONTROL_MESSAGE
    if '\\' in value:
        return f"{show(value)} must use '/' as separator, not '\\'"
    if value.startswith('/'):
        return (f'{show(value)} must be a path relative to the VNF package '
                "root (no leading '/')")
    parts = (value[2:] if value.startswith('./') else value).split('/')
    if '..' in parts:
        return (f"{show(value)} must not contain '..' (the file must be "
                'inside the VNF package)')
    problem = _unsafe(value)
    if problem:
        return problem
    if any(part in ('', '.') for part in parts):
        return (f"{show(value)} is not a normalized path (no '//', '/./' "
                "or trailing '/')")
    if not all(_PATH_PART.fullmatch(part) for part in parts):
        return (f'{show(value)} may only contain letters, digits and '
                "'._+@%=,-' in file and directory names")
    return None


def directory(value: str) -> str | None:
    """A directory on the storage server: absolute and normalized."""
    if has_control(value):
        return CONTROL_MESSAGE
    if not value.startswith('/'):
        return f'{show(value)} must be an absolute path, e.g. /volume/nfs'
    if value.rstrip('/') == '':
        return "must not be '/' (choose a dedicated directory)"
    if '..' in value.split('/'):
        return f"{show(value)} must not contain '..'"
    problem = _unsafe(value)
    if problem:
        return problem
    if posixpath.normpath(value) != value or value.startswith('//'):
        return (f"{show(value)} is not a normalized path (no '//', '/./' "
                "or trailing '/')")
    if not all(_PATH_PART.fullmatch(p) for p in value.split('/')[1:]):
        return (f'{show(value)} may only contain letters, digits and '
                "'._+@%=,-' in directory names")
    return None


def parse_cidr(value: str) -> ipaddress.IPv4Network | \
        ipaddress.IPv6Network | None:
    """The network ``value`` names, or None; host bits may be set."""
    if not _CIDR_SHAPE.fullmatch(value):
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def cidr(value: str) -> str | None:
    """An IPv4/IPv6 network with a prefix length (host bits allowed)."""
    if parse_cidr(value) is None:
        return (f'{show(value)} is not a valid CIDR (expected e.g. '
                '10.0.0.0/16 or fd00::/64)')
    return None


def network(value: str) -> str | None:
    """A CIDR or a single IP address (NFS clients)."""
    if parse_cidr(value) is not None or _is_address(value):
        return None
    return (f'{show(value)} is not a valid IP network (expected a CIDR '
            'such as 10.10.0.0/24 or an IP address)')


# Networks wider than these (a shorter prefix) reach far beyond a
# cluster's own network: exporting NFS to them needs an explicit opt-in.
WIDE_PREFIX = {4: 8, 6: 32}


def too_wide(value: str) -> ipaddress.IPv4Network | \
        ipaddress.IPv6Network | None:
    """The network ``value`` (a CIDR) names when its prefix is shorter
    than ``WIDE_PREFIX`` allows, such as 0.0.0.0/0; else None."""
    net = parse_cidr(value)
    if net is None or net.prefixlen >= WIDE_PREFIX[net.version]:
        return None
    return net


def _is_address(value: str) -> bool:
    if not _ADDRESS_SHAPE.fullmatch(value):
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _is_host(value: str) -> bool:
    if value.startswith('[') and value.endswith(']'):
        return ':' in value and _is_address(value[1:-1])
    if _is_address(value):
        return True
    # All-numeric names such as 10.0.0.300 are broken addresses.
    if re.fullmatch(r'[0-9.]+', value):
        return False
    return _HOST_NAME.fullmatch(value) is not None


def proxy_url(value: str) -> str | None:
    """``scheme://[user:password@]host[:port][/]`` without echoing it."""
    expected = 'e.g. http://[user:password@]host:port'
    if has_control(value):
        return CONTROL_MESSAGE
    if not _URL_CHARS.fullmatch(value):
        return ('must not contain spaces or characters that are not '
                f'allowed in a URL ({expected})')
    match = _URL.fullmatch(value)
    if match is None:
        return f'must be a URL with a scheme and a host ({expected})'
    if match['scheme'].lower() not in _PROXY_SCHEMES:
        return ('must use one of the schemes '
                f"{', '.join(_PROXY_SCHEMES)} ({expected})")
    if not _proxy_host_ok(match['netloc'].rpartition('@')[2]):
        return f'must name a valid proxy host ({expected})'
    return None


def _proxy_host_ok(host_port: str) -> bool:
    if host_port.startswith('['):
        host, bracket, port = host_port.partition(']')
        host += bracket
        if port and not port.startswith(':'):
            return False
        port = port[1:] if port else None
    else:
        host, colon, port_text = host_port.partition(':')
        port = port_text if colon else None
    if port is not None and not _PORT.fullmatch(port):
        return False
    return bool(host) and _is_host(host)


def no_proxy(value: str) -> str | None:
    """Comma-separated hosts, IP addresses, CIDRs or domains."""
    if has_control(value):
        return CONTROL_MESSAGE
    entries = value.split(',')
    problems = []
    if '' in entries:
        problems.append("has empty entries (check for ',,' or a leading "
                        "or trailing ',')")
    bad = [e for e in entries if e and not _no_proxy_entry_ok(e)]
    if bad:
        listed = ', '.join(show(entry) for entry in bad)
        problems.append(f'has invalid entries {listed} (expected host '
                        'names, IP addresses, CIDRs or domains such as '
                        '.example.com, separated by commas without '
                        'spaces)')
    return '; '.join(problems) or None


def _no_proxy_entry_ok(entry: str) -> bool:
    if entry == '*' or _is_host(entry) or parse_cidr(entry) is not None:
        return True
    if re.fullmatch(r'[0-9.]+(?::[0-9]+)?', entry):
        return _is_address(entry.split(':')[0])
    return _NO_PROXY_DOMAIN.fullmatch(entry) is not None
