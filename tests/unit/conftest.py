"""Fixtures shared by the unit tests: the VNF package tests' and a cluster
plan's inputs (the complex sample request, a 3+1 topology, a package
directory holding the real install script, option overrides).

The ETSI SOL001 type files come from ``KMGMT_SOL001_DIR`` when set (a
developer without network), else as ``package build --fetch-sol001``
finds them: the installed tacker package, else the tacker wheel
downloaded once into the user's cache. A failed download fails the
tests: nothing is skipped.
"""
from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from oslo_config import cfg

from kubernetes_mgmt.params.validate import parse_cluster_params
from kubernetes_mgmt.topology.hosts import Host, Role, Topology
from kubernetes_mgmt.vnf_package import sol001
from kubernetes_mgmt.vnf_package.build import BuildOptions, build

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def sol001_dir() -> Path:
    # The tests may download them (package build only with --fetch-sol001).
    return sol001.locate(os.environ.get('KMGMT_SOL001_DIR'),
                         fetch=True).directory


@pytest.fixture(scope='session')
def built_package(tmp_path_factory, sol001_dir) -> Path:
    """A package built from the sample with the placeholder image."""
    output = tmp_path_factory.mktemp('csar') / 'package.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir))
    return output


@pytest.fixture
def cluster_params():
    """The complex sample request's parameters, placeholders filled."""
    body = json.loads((REPO / 'samples/requests/'
                       'complex_kubernetes_param_file.json').read_text())
    body = json.loads(json.dumps(body).replace('REPLACE_WITH_', 'x'))
    return parse_cluster_params(body['additionalParams'])


def _topology(stack='stack-1', vip='10.0.0.100'):
    masters = tuple(Host(Role.MASTER, f'm{i}', f'masterNode{i}',
                         f'10.0.0.{10 + i}', f'10.0.0.{10 + i}',
                         member_name=f'm{i}') for i in range(3))
    workers = (Host(Role.WORKER, 'w0', 'workerNode', '10.0.0.20',
                    '10.0.0.20', member_name='w0'),)
    return Topology(stack, masters, workers, cluster_ip=vip)


@pytest.fixture
def topology_of():
    """``topology_of(stack='stack-1', vip='10.0.0.100')``: 3 masters and
    a worker."""
    return _topology


@pytest.fixture
def package(tmp_path):
    (tmp_path / 'Scripts').mkdir()
    # The package's script is the real one: it declares its contract.
    (tmp_path / 'Scripts/install_k8s_cluster.sh').write_bytes(
        (REPO / 'scripts/install_k8s_cluster.sh').read_bytes())
    return tmp_path


@pytest.fixture
def options():
    """``options(name=value, ...)``: [kubernetes_mgmt] overrides, undone
    after the test."""
    changed = []

    def set_(**values):
        for key, value in values.items():
            cfg.CONF.set_override(key, value, 'kubernetes_mgmt')
            changed.append(key)
    yield set_
    for key in changed:
        cfg.CONF.clear_override(key, 'kubernetes_mgmt')


@pytest.fixture
def state_key(tmp_path):
    """The site key that signs the driver's state (and seals the v2
    instantiate parameters), in a file of this test only."""
    path = tmp_path / 'state.key'
    cfg.CONF.set_override('state_key_file', str(path), 'kubernetes_mgmt')
    yield path
    cfg.CONF.clear_override('state_key_file', 'kubernetes_mgmt')


class SilentServer:
    """Accepts connections (TLS ones with ``context``) and never answers
    until stopped: a service that hangs."""

    def __init__(self, context: ssl.SSLContext | None = None):
        self._listener = socket.create_server(('127.0.0.1', 0))
        self._context = context
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        scheme = 'https' if context else 'http'
        port = self._listener.getsockname()[1]
        self.url = f'{scheme}://127.0.0.1:{port}'

    def _serve(self) -> None:
        self._listener.settimeout(0.1)
        held = []
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            try:
                held.append(self._context.wrap_socket(conn, server_side=True)
                            if self._context else conn)
            except (OSError, ssl.SSLError):
                conn.close()
        for conn in held:
            conn.close()

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Close every connection and the listener (once)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def outcome(self, call: Callable[[], object]) -> BaseException | None:
        """What ``call`` raised (None if nothing), run in a thread: one
        that waits without a timeout is released by stopping the server
        after 20 s (and then fails otherwise)."""
        result: list[BaseException | None] = []

        def run() -> None:
            try:
                call()
            except BaseException as error:   # the outcome under test
                result.append(error)
            else:
                result.append(None)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(20)
        self.stop()
        worker.join()
        return result[0]


@pytest.fixture
def silent_server():
    """``silent_server(context=None)``: a ``SilentServer`` to use with
    ``with``."""
    return SilentServer


@pytest.fixture
def fake_tacker(monkeypatch):
    """``fake_tacker(VimClient, OpenstackClients)``: ``tacker`` modules
    for code that imports Tacker's (``context``, ``vnfm.vim_client``,
    ``common.clients``) where Tacker cannot be imported; undone after
    the test."""
    def install(vim_client: type, openstack_clients: type) -> None:
        modules = {
            'tacker': types.ModuleType('tacker'),
            'tacker.context': types.SimpleNamespace(
                get_admin_context=lambda: 'admin'),
            'tacker.vnfm': types.ModuleType('tacker.vnfm'),
            'tacker.vnfm.vim_client': types.SimpleNamespace(
                VimClient=vim_client),
            'tacker.common': types.ModuleType('tacker.common'),
            'tacker.common.clients': types.SimpleNamespace(
                OpenstackClients=openstack_clients),
        }
        for name, module in modules.items():
            monkeypatch.setitem(sys.modules, name, module)
            parent, _, child = name.rpartition('.')
            if parent:
                setattr(modules[parent], child, module)
    return install
