"""The ETSI NFV SOL001 type definitions every VNFD of the package imports.

They are ETSI's text, distributed with Tacker, so this repository does not
carry them. A build takes them, in this order, from ``--sol001-dir`` (the
two files, or a Tacker installation holding them), from the ``tacker``
package installed in this Python environment, or from an earlier
``--fetch-sol001`` download in the user's cache. Nothing is downloaded
unless ``--fetch-sol001`` asks for it: then pip fetches the ``tacker``
wheel from PyPI once and the files are checked against known hashes.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kubernetes_mgmt.redact import get_logger

LOG = get_logger(__name__)

COMMON = 'etsi_nfv_sol001_common_types.yaml'
VNFD = 'etsi_nfv_sol001_vnfd_types.yaml'
FILES = (COMMON, VNFD)
TACKER_RELEASE = '16.0.0'
# Where the tacker distribution keeps its copies (wheel and site-packages).
TACKER_DATA_DIR = 'tests/unit/vnfm/infra_drivers/openstack/data/etsi_nfv'
# SHA-256 of the copies in tacker 16.0.0 (SOL001 v2.6.1): a downloaded
# wheel must give exactly these.
KNOWN_SHA256 = {
    COMMON: 'b68b61ec02e0527d8875c99a34d31fcc1e7da06898946374819e9705fe9ffdea',
    VNFD: '5635299069cca2d5866c02b301fc17258ad7d4bd75080dd13fa622c4b94f8a37',
}
PIP_TIMEOUT = 600
DIR_OPTION = '--sol001-dir'
FETCH_OPTION = '--fetch-sol001'


class Sol001Error(Exception):
    """The type files cannot be found; the message says what to do."""


@dataclass(frozen=True)
class Sol001Files:
    directory: Path
    origin: str             # for the build report

    def path(self, name: str) -> Path:
        return self.directory / name


def default_cache_dir() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache')
    return Path(base) / 'kubernetes-mgmt'


def locate(sol001_dir: str | os.PathLike | None = None,
           cache_dir: Path | None = None,
           fetch: bool = False) -> Sol001Files:
    """The type files; downloads only with ``fetch``."""
    if sol001_dir is not None:
        return given_dir(Path(sol001_dir))
    installed = installed_tacker_dir()
    if installed is not None:
        return Sol001Files(installed, f'the installed tacker package '
                                      f'({installed})')
    cache = cache_dir or default_cache_dir()
    cached = _cached(cache)
    if cached is not None:
        return cached
    if not fetch:
        raise Sol001Error(_not_found(cache))
    return downloaded(cache)


def given_dir(directory: Path) -> Sol001Files:
    """``--sol001-dir``: the files themselves, or a Tacker virtualenv,
    site-packages directory, source tree or package holding them."""
    for candidate in _candidates(directory):
        if not _missing(candidate):
            return Sol001Files(candidate, f'{candidate} ({DIR_OPTION})')
    raise Sol001Error(
        f'{DIR_OPTION} {directory} has no ' + ' and no '.join(
            _missing(directory)) + ', and no Tacker installation under it '
        f'holds them (looked for tacker/{TACKER_DATA_DIR} in it, in its '
        'lib/python3*/site-packages and in it as the tacker package)')


def _candidates(directory: Path) -> Iterator[Path]:
    yield directory
    yield directory / TACKER_DATA_DIR                   # the tacker package
    yield directory / 'tacker' / TACKER_DATA_DIR        # site-packages, tree
    for site in sorted(directory.glob('lib/python3*/site-packages')):
        yield site / 'tacker' / TACKER_DATA_DIR         # a virtualenv


def installed_tacker_dir() -> Path | None:
    """The copies of an importable ``tacker`` (found without importing)."""
    try:
        spec = importlib.util.find_spec('tacker')
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        directory = Path(location) / TACKER_DATA_DIR
        if not _missing(directory):
            return directory
    return None


def _cache_entry(cache_dir: Path) -> Path:
    return cache_dir / f'sol001-tacker-{TACKER_RELEASE}'


def _origin(directory: Path) -> str:
    return (f'tacker {TACKER_RELEASE} from PyPI ({FETCH_OPTION}, cached in '
            f'{directory})')


def _cached(cache_dir: Path) -> Sol001Files | None:
    directory = _cache_entry(cache_dir)
    return Sol001Files(directory, _origin(directory)) \
        if _known(directory) else None


def downloaded(cache_dir: Path) -> Sol001Files:
    """The files of the tacker wheel pip downloads (``--fetch-sol001``)."""
    directory = _cache_entry(cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as work:
        wheel = _download_wheel(Path(work))
        _extract(wheel, directory)
    return Sol001Files(directory, _origin(directory))


def _not_found(cache_dir: Path) -> str:
    return (f'the ETSI SOL001 type files ({COMMON}, {VNFD}) were not found: '
            f'no tacker package is installed in this Python environment '
            f'({sys.prefix}) and {_cache_entry(cache_dir)} holds no earlier '
            f'download. Pass {DIR_OPTION} DIR (a directory with the two '
            f'files, or the virtualenv tacker-conductor runs in), or '
            f'{FETCH_OPTION} to download tacker=={TACKER_RELEASE} from PyPI '
            'once')


def _missing(directory: Path) -> list[str]:
    return [name for name in FILES if not (directory / name).is_file()]


def _known(directory: Path) -> bool:
    return all((directory / name).is_file() and _sha256(
        (directory / name).read_bytes()) == digest
        for name, digest in KNOWN_SHA256.items())


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download_wheel(work: Path) -> Path:
    requirement = f'tacker=={TACKER_RELEASE}'
    argv = [sys.executable, '-m', 'pip', 'download', '--no-deps',
            '--only-binary=:all:', '--dest', str(work), requirement]
    LOG.info('downloading %s to read the SOL001 type files', requirement)
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=PIP_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Sol001Error(_no_download(f'pip failed to run: {exc}')) from None
    wheels = sorted(work.glob('tacker-*.whl'))
    if done.returncode != 0 or not wheels:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ['']
        raise Sol001Error(_no_download(f'pip download {requirement} '
                                       f'failed: {last[0]}'))
    return wheels[0]


def _no_download(reason: str) -> str:
    return (f'cannot get the ETSI SOL001 type files: {reason}. Install '
            f'tacker=={TACKER_RELEASE} in this environment, or pass '
            f'{DIR_OPTION} DIR with {COMMON} and {VNFD} (or a Tacker '
            'virtualenv or source tree holding them)')


def _extract(wheel: Path, directory: Path) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name, digest in KNOWN_SHA256.items():
                data = archive.read(f'tacker/{TACKER_DATA_DIR}/{name}')
                if _sha256(data) != digest:
                    raise Sol001Error(
                        f'{name} in the downloaded {wheel.name} is not the '
                        f'tacker {TACKER_RELEASE} copy (SHA-256 differs)')
                (directory / name).write_bytes(data)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise Sol001Error(f'{wheel.name} does not hold the SOL001 type '
                          f'files: {exc}') from None
