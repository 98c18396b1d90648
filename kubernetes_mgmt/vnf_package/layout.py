"""Where things are: inside the CSAR, in the plugin, in a checkout."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import kubernetes_mgmt

TOSCA_META = 'TOSCA-Metadata/TOSCA.meta'
DEFINITIONS = 'Definitions'
SCRIPTS = 'Scripts'
DRIVER_FILE = 'Scripts/kubernetes_mgmt.py'
IMAGES = 'Files/images'
MANIFESTS = 'Files/kubernetes'
BASE_HOT = 'BaseHOT'
USER_DATA = 'UserData'
DRIVER_NAME = 'mgmt-drivers-kubernetes'
DRIVER_MODULE = 'kubernetes_mgmt.kubernetes_mgmt'
# Tacker's v2 API runs an LCM script of the package instead: this file,
# named by this artifact (its path relative to Definitions/).
DRIVER_V2_NAME = 'mgmt-drivers-kubernetes-v2'
DRIVER_V2_FILE = 'Scripts/tacker_kubernetes_mgmt_v2.py'
DRIVER_V2_MODULE = 'kubernetes_mgmt.v2.lcm_script'
# The package the v2 script imports: a module or directory of this name
# beside it would be imported instead (its directory is sys.path[0]).
V2_IMPORTS = 'kubernetes_mgmt'
DISTRIBUTION = 'tacker-kubernetes-mgmt'
DEFAULT_OUTPUT = 'kubernetes_mgmt_vnf_package.zip'
CNF_OUTPUT = 'kubernetes_mgmt_cnf_package.zip'
V2_OUTPUT = 'kubernetes_mgmt_vnf_package_v2.zip'

_PACKAGE = Path(kubernetes_mgmt.__file__).resolve().parent
# Files and directories of a sample tree that never go into a CSAR
# (byte-compiled copies appear when the wheel is installed).
_JUNK_DIRS = frozenset({'__pycache__'})
_JUNK_SUFFIXES = ('.pyc', '.pyo', '~', '.swp')


def samples_root() -> Path:
    """``samples/``: package data of a wheel, else the checkout's.

    setup.py copies the repository's ``samples/`` to
    ``kubernetes_mgmt/data/samples`` when it builds a wheel; a checkout or
    an editable install reads ``<repo>/samples``.
    """
    packaged = _PACKAGE / 'data' / 'samples'
    checkout = _PACKAGE.parent / 'samples'
    for candidate in (packaged, checkout):
        if (candidate / 'vnf_package' / TOSCA_META).is_file():
            return candidate
    raise FileNotFoundError(
        f'the sample VNF package is neither in {packaged} nor in '
        f'{checkout}; reinstall {DISTRIBUTION}')


def sample_package_dir() -> Path:
    return samples_root() / 'vnf_package'


def request_samples_dir() -> Path:
    return samples_root() / 'requests'


def sample_v2_package_dir() -> Path:
    """The sample cluster package for Tacker's v2 API."""
    return samples_root() / 'vnf_package_v2'


def request_v2_samples_dir() -> Path:
    return samples_root() / 'requests_v2'


def cnf_package_dir() -> Path:
    """The sample CNF package: objects for the kubernetes-namespaced
    infra driver, no VMs, no Mgmt Driver."""
    return samples_root() / 'cnf_package'


def cnf_request_samples_dir() -> Path:
    return samples_root() / 'cnf_requests'


# The request samples that go with each sample package: a package built
# from a sample says so in TOSCA.meta's Created-By, and verify checks it
# against these; a package built from a source of the operator's own has
# no requests but those verify is given.
SAMPLE_REQUESTS = {'vnf_package': 'requests',
                   'vnf_package_v2': 'requests_v2',
                   'cnf_package': 'cnf_requests'}
_SAMPLE_MARK = re.compile(r' \(sample (?P<name>[a-z0-9_]+)\)$')


def sample_name(source: Path) -> str | None:
    """The name of the plugin's sample package at ``source``, if it is
    one (else an operator's own source)."""
    try:
        root = samples_root().resolve()
    except FileNotFoundError:
        return None
    return next((name for name in SAMPLE_REQUESTS
                 if Path(source).resolve() == root / name), None)


def created_by(sample: str | None) -> str:
    """TOSCA.meta's Created-By for a package built from ``sample``
    (None: from an operator's own source)."""
    base = f'{DISTRIBUTION} {plugin_version()}'
    return f'{base} (sample {sample})' if sample else base


def sample_requests_dir(created: str) -> Path | None:
    """The request samples of the sample a package was built from, as
    its Created-By says; None for a package of the operator's own."""
    match = _SAMPLE_MARK.search(created)
    name = match.group('name') if match else None
    if name not in SAMPLE_REQUESTS:
        return None
    return samples_root() / SAMPLE_REQUESTS[name]


def is_cnf_source(source: Path) -> bool:
    """A package source without BaseHOT makes no VMs: a CNF package."""
    return not (source / BASE_HOT).is_dir()


def is_v2_source(source: Path) -> bool:
    """A source whose VNFD names the v2 LCM script artifact."""
    return any(DRIVER_V2_NAME in path.read_text(encoding='utf-8')
               for path in (source / DEFINITIONS).glob('*.yaml'))


def installed_v2_script() -> Path:
    """The LCM script a v2 package carries (found, not imported)."""
    spec = importlib.util.find_spec(DRIVER_V2_MODULE)
    if spec is None or not spec.origin:
        raise FileNotFoundError(f'{DRIVER_V2_MODULE} is not installed')
    return Path(spec.origin)


def installed_driver_file() -> Path:
    """The module Tacker hashes: the file defining KubernetesMgmtDriver.
    Found, not imported: the shim sits above this package's layer."""
    spec = importlib.util.find_spec(DRIVER_MODULE)
    if spec is None or not spec.origin:
        raise FileNotFoundError(f'{DRIVER_MODULE} is not installed')
    return Path(spec.origin)


def plugin_version() -> str:
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return 'unknown'


def tree_files(root: Path) -> list[str]:
    """Relative POSIX paths of the files under ``root``, sorted."""
    found = []
    for path in root.rglob('*'):
        relative = path.relative_to(root)
        if _JUNK_DIRS & set(relative.parts[:-1]):
            continue
        name = relative.name
        if (path.is_file() and not name.startswith('.')
                and not name.endswith(_JUNK_SUFFIXES)):
            found.append(relative.as_posix())
    return sorted(found)
