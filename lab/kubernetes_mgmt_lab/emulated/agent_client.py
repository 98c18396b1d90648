"""The ``klab-run`` client of the command agent, built once per machine.

``client_path(python, import_paths)`` compiles ``klab_run.c`` with the
machine's C compiler into a directory beside which it also writes
``standin``, the client's fallback (the stand-in started from scratch
with ``python``). The directory is named after a hash of the source and
of the fallback, so a changed client or another virtualenv gets its own;
it lives outside the hosts' private directories, where every host sees
it. Without a compiler there is no client, and the commands' wrappers
start the stand-ins themselves (``emulated.wrapper_script``).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
from importlib import resources

from kubernetes_mgmt_lab.emulated import PACKAGE

LOG = logging.getLogger(__name__)
CACHE = '/var/cache/kubernetes-mgmt-lab/klab-run'
CLIENT = 'klab-run'
STANDIN = 'standin'


def standin_script(python: str, import_paths: list[str]) -> str:
    """``standin NAME MODULE [ARG...]``: runs MODULE's ``cli()`` as the
    command NAME, in a new interpreter (as ``wrapper_script`` does)."""
    code = (f'import sys; sys.path += {list(import_paths)!r}; '
            'module = sys.argv.pop(1); __import__(module); '
            'sys.modules[module].cli()')
    return ('#!/bin/sh\n'
            '# lab stand-ins without the host\'s command agent\n'
            'KLAB_ARGV0=$1\n'
            'export KLAB_ARGV0\n'
            'shift\n'
            f'exec {shlex.quote(python)} -I -S -c {shlex.quote(code)} '
            '"$@"\n')


def client_path(python: str, import_paths: list[str],
                cache: str = CACHE) -> str | None:
    """``klab-run`` (with ``standin`` beside it) for ``python``; None
    when this machine cannot compile it."""
    source = resources.files(PACKAGE).joinpath('klab_run.c').read_bytes()
    standin = standin_script(python, import_paths)
    digest = hashlib.sha256(source + standin.encode()).hexdigest()[:16]
    final = os.path.join(cache, digest)
    client = os.path.join(final, CLIENT)
    if os.path.exists(client):
        return client
    compiler = shutil.which('cc') or shutil.which('gcc')
    if compiler is None:
        LOG.warning('lab: no C compiler: emulated commands start without '
                    'the command agent (slower)')
        return None
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix='.build-', dir=cache)
    try:
        try:
            _build(compiler, source, standin, work)
        except subprocess.CalledProcessError as e:
            LOG.warning('lab: the command agent\'s client did not compile '
                        '(commands start without the agent): %s',
                        e.stderr.decode(errors='replace')[-2000:])
            return None
        try:
            os.rename(work, final)
        except OSError:     # built by another host at the same time
            if not os.path.exists(client):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return client


def _build(compiler: str, source: bytes, standin: str, work: str) -> None:
    os.chmod(work, 0o755)   # noqa: S103 - every host user runs the client
    src = os.path.join(work, 'klab_run.c')
    with open(src, 'wb') as f:
        f.write(source)
    subprocess.run([compiler, '-O2', '-Wall', '-Werror', '-o',
                    os.path.join(work, CLIENT), src],
                   check=True, capture_output=True)
    script = os.path.join(work, STANDIN)
    with open(script, 'w', encoding='utf-8') as f:
        f.write(standin)
    os.chmod(script, 0o755)  # noqa: S103 - commands must be executable
