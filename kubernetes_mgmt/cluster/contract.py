"""The install script's input contract: its one definition.

Each role of ``scripts/install_k8s_cluster.sh`` reads KEY=VALUE lines.
Which keys a role takes, which of them it requires and the type of each
key's value are declared here, once. The script carries the same facts
as bash tables (KEY_TYPE, REQUIRED, OPTIONAL, HINT) between the markers
``BEGIN_MARK`` and ``END_MARK``; that block is rendered from this module
(``render_tables``; ``tools/sync_script_contract.py`` rewrites it), so the
script stays self-contained on the VM. ``table_problems`` compares a
script's block with this definition: the tests, ``package verify`` and
the driver (before it touches a host) refuse a script that disagrees.

The driver checks every configuration it sends against the same
definition (``problems``): a required key missing or a value the script
would refuse is reported naming the role and the key, never the value.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kubernetes_mgmt.errors import MgmtDriverError

# The contract (role names, configuration keys, outputs) this driver
# speaks with the install script; the script declares its own as
# "readonly CONTRACT_VERSION=N". Raised whenever either side changes
# incompatibly (2: sandbox image and CNI checksum keys, SANDBOX_IMAGE
# output of prepare; 3: status and reset roles, completion records,
# refresh-join applies the CNI, storage volumes named by Cinder id and
# size; 4: upgrade role; 5: the Kubernetes apt key pinned by fingerprint,
# registries with CA, client certificate, credentials and skip_verify;
# 6: the hosts role writes the registries too, so nodes outside an
# operation take a rotated configuration).
CONTRACT_VERSION = 6

Value = str | int | None


class ContractViolation(MgmtDriverError):
    """A configuration the driver would send breaks the contract."""


# -- value types (the script's "valid TYPE VALUE" mirrors each) ------------

_OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
_IP = rf'{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}'
_LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?'
_NAME = rf'{_LABEL}(\.{_LABEL})*'
_PORT = '[0-9]{1,5}'
_URL = rf'https?://[A-Za-z0-9.-]+(:{_PORT})?(/[A-Za-z0-9._~:/%+=-]*)?'
_USERINFO = '[A-Za-z0-9._~%!*+=-]+(:[A-Za-z0-9._~%!*+=-]*)?@'
_PROXY = rf'https?://({_USERINFO})?[A-Za-z0-9.-]+(:{_PORT})?/?'
_IMAGE_REPO = (rf'{_LABEL}(\.{_LABEL})*(:{_PORT})?'
               r'(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*')


def _re(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda v: compiled.fullmatch(v) is not None


def _int_in(low: int, high: int) -> Callable[[str], bool]:
    return lambda v: (re.fullmatch('[0-9]{1,6}', v) is not None
                      and low <= int(v) <= high)


_is_ip = _re(_IP)
_is_name = _re(_NAME)


def _is_host(v: str) -> bool:
    return _is_ip(v) or _is_name(v)


def _split(v: str, sep: str, last: bool = False) -> tuple[str, str]:
    """Bash's ${v%%SEP*} and ${v#*SEP} (``last``: ${v%SEP*}, ${v##*SEP}):
    without SEP both halves are the whole value."""
    if sep not in v:
        return v, v
    head, _, tail = v.rpartition(sep) if last else v.partition(sep)
    return head, tail


def _each(sep: str, check: Callable[[str], bool]) -> Callable[[str], bool]:
    """Non-empty SEP-separated items, none empty, each passing ``check``."""
    return lambda v: bool(v) and all(
        item and check(item) for item in v.split(sep))


def _pair(first: Callable[[str], bool], second: Callable[[str], bool],
          sep: str = '=') -> Callable[[str], bool]:
    return lambda v: first(_split(v, sep)[0]) and second(_split(v, sep)[1])


def _is_registry(v: str) -> bool:
    return v == '_default' or re.fullmatch(rf'{_NAME}(:{_PORT})?',
                                           v) is not None


def _is_registry_blob(v: str) -> bool:
    registry, blob = _split(v, '=')
    return '=' in v and _is_registry(registry) and re.fullmatch(
        '[A-Za-z0-9+/]+={0,2}', blob) is not None


def _is_mirror(v: str) -> bool:
    registry, url = _split(v, '=')
    return '=' in v and _is_registry(registry) and \
        re.fullmatch(_URL, url) is not None


def _is_abs_path(v: str) -> bool:
    return re.fullmatch(r'(/[A-Za-z0-9._+@%=,-]+)+', v) is not None and \
        '/../' not in f'/{v}/' and '/./' not in f'/{v}/'


def _is_device(v: str) -> bool:
    return re.fullmatch(r'/dev/[A-Za-z0-9._/-]+', v) is not None and \
        '/../' not in f'/{v}/'


def _is_cidr(v: str) -> bool:
    address, prefix = _split(v, '/', last=True)
    return '/' in v and _is_ip(address) and _int_in(0, 32)(prefix)


def _is_client(v: str) -> bool:
    return _is_ip(v) or _is_cidr(v) or (
        ':' in v and re.fullmatch('[0-9A-Fa-f:]+(/[0-9]{1,3})?', v)
        is not None)


def _is_export(v: str) -> bool:
    directory, _, client = v.partition(' ')
    return ' ' in v and ' ' not in client and _is_abs_path(directory) \
        and _is_client(client)


def _is_volume(v: str) -> bool:
    parts = v.split(' ')
    return len(parts) == 4 and re.fullmatch(
        '[A-Za-z0-9][A-Za-z0-9-]{7,63}', parts[0]) is not None and \
        _int_in(1, 999999)(parts[1]) and _is_device(parts[2]) and \
        _is_abs_path(parts[3])


def _is_endpoint(v: str) -> bool:
    host, port = _split(v, ':', last=True)
    return ':' in v and _is_host(host) and _int_in(1, 65535)(port)


def _is_manifest(v: str) -> bool:
    return re.fullmatch(_URL, v) is not None or (
        re.fullmatch('/[A-Za-z0-9._/-]+', v) is not None and '..' not in v)


@dataclass(frozen=True)
class KeyType:
    """A kind of value; ``name`` is the script's name for it (``valid``),
    ``hint`` what its error message says is expected (the script's HINT
    table; without one it says "a valid NAME")."""
    name: str
    check: Callable[[str], bool]
    hint: str = ''

    @property
    def expected(self) -> str:
        return self.hint or f'a valid {self.name}'


_TYPES = (
    KeyType('name', lambda v: len(v) <= 253 and _is_name(v),
            'a lowercase DNS name ([a-z0-9.-])'),
    KeyType('ip', _is_ip),
    KeyType('seconds', _int_in(1, 86400)),
    KeyType('minor', _re(r'1\.[0-9]{1,3}')),
    KeyType('url', _re(_URL)),
    KeyType('proxy', _re(_PROXY)),
    KeyType('noproxy', _each(',', _re('[A-Za-z0-9.*/:_-]+'))),
    KeyType('mirrors', _each(',', _is_mirror)),
    KeyType('regblobs', _each(',', _is_registry_blob),
            '"registry=<base64>,..."'),
    KeyType('registries', _each(',', _is_registry),
            '"registry[:port],..."'),
    KeyType('abspath', _is_abs_path, 'an absolute path'),
    KeyType('patch', _re(r'1\.[0-9]{1,3}\.[0-9]{1,3}'), 'X.Y.Z, e.g. 1.37.1'),
    KeyType('fingerprints', _each(',', _re('[0-9A-F]{40}')),
            '40 uppercase hex digits, comma-separated'),
    KeyType('hosts', _each(',', _pair(_is_ip, _is_name))),
    KeyType('backends', _each(',', _pair(_is_name, _is_ip))),
    KeyType('iplist', _each(',', _is_ip)),
    KeyType('sans', _each(',', _is_host)),
    KeyType('lbport', lambda v: _int_in(1, 65535)(v) and int(v) != 6443,
            'a port other than 6443'),
    KeyType('prefix', _int_in(1, 32)),
    KeyType('routerid', _int_in(1, 255)),
    KeyType('priority', _int_in(1, 254)),
    KeyType('vrrpstate', lambda v: v in ('MASTER', 'BACKUP')),
    KeyType('vrrppass', _re('[A-Za-z0-9._~+=-]{1,8}'),
            '1-8 characters of [A-Za-z0-9._~+=-]'),
    KeyType('endpoint', _is_endpoint),
    KeyType('cidr', _is_cidr),
    KeyType('token', _re(r'[a-z0-9]{6}\.[a-z0-9]{16}'),
            'a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}'),
    KeyType('certkey', _re('[a-f0-9]{64}'), '64 lowercase hex digits'),
    KeyType('cahash', _re('sha256:[a-f0-9]{64}'), 'sha256:<64 hex digits>'),
    KeyType('imagerepo', _re(_IMAGE_REPO)),
    KeyType('cni', lambda v: v in ('calico', 'flannel')),
    KeyType('manifest', _is_manifest),
    KeyType('sha256', _re('[a-f0-9]{64}'), '64 lowercase hex digits'),
    KeyType('flag', lambda v: v in ('0', '1')),
    KeyType('upgrade', lambda v: v in ('apply', 'node'), 'apply or node'),
    KeyType('volumes', _each(';', _is_volume),
            '"VOLUME-ID GIB /dev/DEVICE /MOUNT/POINT;..."'),
    KeyType('exports', _each(';', _is_export), '"/DIR IP-OR-CIDR;..."'),
)
TYPES: dict[str, KeyType] = {t.name: t for t in _TYPES}

# -- keys and roles ---------------------------------------------------------

# Every configuration key and the type of its value, whatever the role.
KEY_TYPES: dict[str, str] = {
    'NODE_NAME': 'name', 'NODE_IP': 'ip', 'DEADLINE': 'seconds',
    'K8S_VERSION': 'minor', 'K8S_APT_REPO': 'url', 'K8S_APT_KEY_URL': 'url',
    'HTTP_PROXY': 'proxy', 'HTTPS_PROXY': 'proxy', 'NO_PROXY': 'noproxy',
    'K8S_APT_KEY_FINGERPRINTS': 'fingerprints',
    'IMAGE_BUNDLE': 'abspath', 'K8S_PATCH': 'patch',
    'REGISTRY_MIRRORS': 'mirrors', 'REGISTRY_CA': 'regblobs',
    'REGISTRY_CLIENT_CERT': 'regblobs', 'REGISTRY_CLIENT_KEY': 'regblobs',
    'REGISTRY_AUTH': 'regblobs', 'REGISTRY_SKIP_VERIFY': 'registries',
    'HOSTS': 'hosts',
    'LB_PORT': 'lbport', 'LB_BACKENDS': 'backends', 'VIP': 'ip',
    'VIP_PREFIX': 'prefix', 'VRRP_ROUTER_ID': 'routerid',
    'VRRP_PRIORITY': 'priority', 'VRRP_STATE': 'vrrpstate',
    'VRRP_PASSWORD': 'vrrppass', 'VRRP_PEERS': 'iplist',
    'CONTROL_PLANE_ENDPOINT': 'endpoint', 'POD_CIDR': 'cidr',
    'SERVICE_CIDR': 'cidr', 'API_CERT_SANS': 'sans',
    'BOOTSTRAP_TOKEN': 'token', 'CERTIFICATE_KEY': 'certkey',
    'CA_CERT_HASH': 'cahash', 'IMAGE_REPOSITORY': 'imagerepo', 'CNI': 'cni',
    'CNI_MANIFEST': 'manifest', 'CNI_SHA256': 'sha256', 'NFS_CLIENT': 'flag',
    'VOLUMES': 'volumes', 'EXPORTS': 'exports', 'UPGRADE': 'upgrade',
}


@dataclass(frozen=True)
class RoleInput:
    """What one role reads besides the keys every role takes."""
    role: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def keys(self) -> dict[str, bool]:
        """Every key this role takes -> whether it is required."""
        return {**{k: True for k in COMMON.required},
                **{k: False for k in COMMON.optional},
                **{k: True for k in self.required},
                **{k: False for k in self.optional}}


_PROXY_KEYS = ('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY')
_CNI_KEYS = ('CNI', 'CNI_MANIFEST', 'CNI_SHA256')
_BUNDLE_KEYS = ('IMAGE_BUNDLE', 'K8S_PATCH')
_REGISTRY_KEYS = ('REGISTRY_MIRRORS', 'REGISTRY_CA', 'REGISTRY_CLIENT_CERT',
                  'REGISTRY_CLIENT_KEY', 'REGISTRY_AUTH',
                  'REGISTRY_SKIP_VERIFY')

COMMON = RoleInput('*', required=('NODE_NAME', 'NODE_IP'),
                   optional=('DEADLINE',))
_ROLES = (
    RoleInput('prepare', required=('K8S_VERSION',
                                   'K8S_APT_KEY_FINGERPRINTS'),
              optional=('K8S_APT_REPO', 'K8S_APT_KEY_URL', *_REGISTRY_KEYS,
                        'HOSTS', *_PROXY_KEYS, 'NFS_CLIENT',
                        'IMAGE_REPOSITORY', *_BUNDLE_KEYS)),
    RoleInput('lb', required=('LB_BACKENDS', 'VIP', 'VIP_PREFIX',
                              'VRRP_ROUTER_ID', 'VRRP_PRIORITY', 'VRRP_STATE',
                              'VRRP_PASSWORD', 'VRRP_PEERS'),
              optional=('LB_PORT',)),
    RoleInput('init', required=('K8S_VERSION', 'CONTROL_PLANE_ENDPOINT',
                                'POD_CIDR', 'SERVICE_CIDR', 'BOOTSTRAP_TOKEN',
                                *_CNI_KEYS),
              optional=('CERTIFICATE_KEY', 'IMAGE_REPOSITORY',
                        'API_CERT_SANS', *_PROXY_KEYS)),
    RoleInput('join-master', required=('CONTROL_PLANE_ENDPOINT',
                                       'BOOTSTRAP_TOKEN', 'CA_CERT_HASH',
                                       'CERTIFICATE_KEY')),
    RoleInput('join-worker', required=('CONTROL_PLANE_ENDPOINT',
                                       'BOOTSTRAP_TOKEN', 'CA_CERT_HASH')),
    RoleInput('refresh-join', required=('BOOTSTRAP_TOKEN',),
              optional=('CERTIFICATE_KEY', *_CNI_KEYS, 'POD_CIDR',
                        *_PROXY_KEYS)),
    RoleInput('hosts', required=('HOSTS',), optional=_REGISTRY_KEYS),
    RoleInput('storage', required=('VOLUMES', 'EXPORTS'),
              optional=_PROXY_KEYS),
    RoleInput('status'),
    RoleInput('reset'),
    RoleInput('upgrade', required=('K8S_VERSION', 'UPGRADE',
                                   'K8S_APT_KEY_FINGERPRINTS'),
              optional=('K8S_APT_REPO', 'K8S_APT_KEY_URL', *_PROXY_KEYS,
                        *_BUNDLE_KEYS)),
)
ROLES: dict[str, RoleInput] = {r.role: r for r in _ROLES}


# -- checking a configuration the driver sends ------------------------------

def problems(role: str, config: Mapping[str, Value]) -> list[str]:
    """What breaks the contract in ``config`` for ``role`` (empty: none).
    None and '' mean "not given", as in the script. Values are never
    quoted: some are secrets."""
    spec = ROLES.get(role)
    if spec is None:
        return [f'{role!r} is not a role of the install script']
    keys = spec.keys()
    found = [f'{key} is not used by role {role}'
             for key in config if key not in keys]
    for key, required in keys.items():
        value = config.get(key)
        text = '' if value is None else str(value)
        if not text:
            if required:
                found.append(f'{key} is required for role {role}')
            continue
        kind = TYPES[KEY_TYPES[key]]
        if not kind.check(text):
            found.append(f'invalid {key}: expected {kind.expected}')
    return found


def check(role: str, config: Mapping[str, Value]) -> None:
    """ContractViolation naming the role, the node and every key that
    breaks the contract; nothing has been sent."""
    found = problems(role, config)
    if found:
        node = config.get('NODE_NAME') or 'unknown node'
        raise ContractViolation(
            f'install-script role {role} for {node}: {"; ".join(found)} '
            '(the configuration the driver built breaks the script '
            'contract; it was not sent)')


# -- the script's tables ----------------------------------------------------

BEGIN_MARK = '# BEGIN contract tables'
END_MARK = '# END contract tables'
_HEADER = (f'{BEGIN_MARK}: rendered from kubernetes_mgmt/cluster/'
           'contract.py by\n# tools/sync_script_contract.py; change them '
           'there, never here.')


def _quoted(words: Iterable[str]) -> str:
    text = ' '.join(words)
    assert "'" not in text
    return f"'{text}'"


def render_tables() -> str:
    """The bash block the script carries, markers included."""
    lines = [_HEADER,
             f'readonly COMMON_REQUIRED={_quoted(COMMON.required)}',
             f'readonly COMMON_OPTIONAL={_quoted(COMMON.optional)}',
             'declare -A KEY_TYPE=(']
    lines += [f'    [{key}]={kind}' for key, kind in KEY_TYPES.items()]
    lines += [')', 'declare -A REQUIRED=(']
    lines += [f'    [{r.role}]={_quoted(r.required)}' for r in _ROLES]
    lines += [')', 'declare -A OPTIONAL=(']
    lines += [f'    [{r.role}]={_quoted(r.optional)}' for r in _ROLES]
    lines += [')', 'declare -A HINT=(']
    lines += [f'    [{t.name}]={_quoted([t.hint])}' for t in _TYPES if t.hint]
    lines += [')', END_MARK]
    return '\n'.join(lines) + '\n'


def tables_block(text: str) -> str | None:
    """The block of ``text`` between the markers (included), or None."""
    start = text.find(f'\n{BEGIN_MARK}')
    end = text.find(f'\n{END_MARK}\n')
    if start < 0 or end < start:
        return None
    return text[start + 1:end + len(END_MARK) + 2]


@dataclass(frozen=True)
class Tables:
    """The contract as a script's block states it."""
    common: dict[str, bool]
    key_types: dict[str, str]
    roles: dict[str, dict[str, bool]]
    hints: dict[str, str]


_SCALAR = re.compile(r"^readonly (COMMON_REQUIRED|COMMON_OPTIONAL)='([^']*)'$")
_ARRAY = re.compile(r'^declare -A ([A-Z_]+)=\($')
_ENTRY = re.compile(r"^\s+\[([A-Za-z0-9_-]+)\]=(?:'([^']*)'|(\S+))$")


def parse_tables(block: str) -> Tables:
    """ValueError naming the line that is not of the rendered shape."""
    scalars: dict[str, list[str]] = {}
    arrays: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for n, line in enumerate(block.splitlines()[1:-1], start=2):
        if line.startswith('#') or not line.strip():
            continue
        if current is not None:
            entry = _ENTRY.match(line)
            if entry:
                current[entry[1]] = entry[2] if entry[3] is None else entry[3]
            elif line == ')':
                current = None
            else:
                raise ValueError(f'line {n} of the contract tables is not '
                                 f'"[NAME]=VALUE": {line.strip()[:60]!r}')
        elif scalar := _SCALAR.match(line):
            scalars[scalar[1]] = scalar[2].split()
        elif array := _ARRAY.match(line):
            current = arrays.setdefault(array[1], {})
        else:
            raise ValueError(f'line {n} of the contract tables is not a '
                             f'table: {line.strip()[:60]!r}')
    required, optional = arrays.get('REQUIRED', {}), arrays.get('OPTIONAL', {})
    for role in required.keys() & optional.keys():
        both = set(required[role].split()) & set(optional[role].split())
        if both:
            raise ValueError(f'role {role} lists {" ".join(sorted(both))} '
                             'as required and as optional')
    roles = {role: {**{k: False for k in optional.get(role, '').split()},
                    **{k: True for k in required.get(role, '').split()}}
             for role in {*required, *optional}}
    return Tables(
        common={**{k: False for k in scalars.get('COMMON_OPTIONAL', [])},
                **{k: True for k in scalars.get('COMMON_REQUIRED', [])}},
        key_types=arrays.get('KEY_TYPE', {}), roles=roles,
        hints=arrays.get('HINT', {}))


def _word(required: bool) -> str:
    return 'required' if required else 'optional'


def _compare_keys(where: str, ours: dict[str, bool],
                  theirs: dict[str, bool]) -> list[str]:
    found = []
    for key, required in ours.items():
        if key not in theirs:
            found.append(f'{where}: {key} ({_word(required)}) is missing '
                         'from the script')
        elif theirs[key] != required:
            found.append(f'{where}: {key} is {_word(required)} in the '
                         f'plugin, {_word(theirs[key])} in the script')
    found += [f'{where}: {key} is in the script only'
              for key in theirs if key not in ours]
    return found


def table_problems(text: str) -> list[str]:
    """How the contract tables of script ``text`` differ from this
    module's, one line per difference (empty: they agree)."""
    block = tables_block(text)
    if block is None:
        return [f'has no contract tables (the lines from "{BEGIN_MARK}" '
                f'to "{END_MARK}")']
    try:
        tables = parse_tables(block)
    except ValueError as exc:
        return [str(exc)]
    found = _compare_keys('every role', COMMON.keys(), tables.common)
    for role, spec in ROLES.items():
        if role not in tables.roles:
            found.append(f'role {role} is missing from the script')
            continue
        theirs = tables.roles[role]
        found += _compare_keys(f'role {role}', {
            k: r for k, r in spec.keys().items() if k not in COMMON.keys()},
            theirs)
    found += [f'role {role} is in the script only'
              for role in tables.roles if role not in ROLES]
    found += _compare_keys_types(tables.key_types)
    hints = {t.name: t.hint for t in _TYPES if t.hint}
    if tables.hints != hints:
        found.append('the error hints (HINT) differ from the plugin\'s')
    return found


def _compare_keys_types(theirs: dict[str, str]) -> list[str]:
    found = []
    for key, kind in KEY_TYPES.items():
        if key not in theirs:
            found.append(f'key {key} ({kind}) is missing from the script')
        elif theirs[key] != kind:
            found.append(f'key {key} is of type {kind} in the plugin, '
                         f'{theirs[key]} in the script')
    found += [f'key {key} is in the script only'
              for key in theirs if key not in KEY_TYPES]
    return found


def replace_tables(text: str) -> str:
    """``text`` with its contract tables rendered from this module."""
    block = tables_block(text)
    if block is None:
        raise ValueError(f'no "{BEGIN_MARK}" ... "{END_MARK}" block')
    return text.replace(block, render_tables(), 1)
