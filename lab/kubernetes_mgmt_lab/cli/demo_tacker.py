"""``kubernetes-mgmt demo --tacker``: the operator's session of README's
"Using it with the openstack CLI", run against the real services of
``lab tacker`` (started for the demo and stopped after it): each
openstack command is printed with what it answered."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from kubernetes_mgmt_lab.openstack.layout import Root

REQUEST = 'complex_kubernetes_param_file.json'


def run_tacker(root_path: str, checkout: str) -> int:
    from kubernetes_mgmt_lab.errors import LabError
    from kubernetes_mgmt_lab.openstack import site

    print('=== the OpenStack services and Tacker, with the plugin ===')
    started = time.monotonic()
    try:
        site.up(root_path, checkout)
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    print(f'services up in {time.monotonic() - started:.0f} s')
    try:
        return _session(Root(os.path.abspath(root_path)), checkout)
    except LabError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    finally:
        print('=== stopping the services ===')
        site.down(root_path)


def _session(root: Root, checkout: str) -> int:
    from kubernetes_mgmt_lab.openstack import inspect, tacker
    from kubernetes_mgmt_lab.openstack.operator import Operator

    op = Operator(root, echo=print)
    step = _stepper()
    step('register this OpenStack as the default VIM')
    vim_id = op.register_vim()
    step('build and onboard the VNF package')
    csar = root.of('k8s_cluster.zip')
    subprocess.run([tacker.VENV.bin('kubernetes-mgmt'), 'package', 'build',
                    '-o', csar], check=True, capture_output=True)
    package_id, vnfd_id = op.onboard(csar)
    step('create and instantiate the HA cluster (3 masters + 2 workers)')
    vnf = op.create(vnfd_id, name='demo-ha')
    request = os.path.join(checkout, 'samples', 'requests', REQUEST)
    op.instantiate(vnf, op.request_file(request, vim_id, 'demo-ha'))
    op.run('vim', 'list', parse=False)
    step('scale the workers out, then in')
    op.scale(vnf, 'SCALE_OUT', 'worker_instance')
    op.scale(vnf, 'SCALE_IN', 'worker_instance')
    vnfcs = inspect.vnfcs(root, op.show(vnf))
    for vdu in ('masterNode', 'workerNode'):
        step(f'heal one {vdu}')
        op.heal(vnf, (next(v.id for v in vnfcs if v.vdu == vdu),))
    step('heal the whole VNF')
    op.heal(vnf)
    step('terminate and delete')
    op.terminate(vnf)
    op.run('vnflcm', 'delete', vnf, parse=False)
    op.run('vnf', 'package', 'update', '--operational-state', 'DISABLED',
           package_id)
    op.run('vnf', 'package', 'delete', package_id, parse=False)
    print('\n=== seconds per operation, through Tacker ===')
    for name, seconds in op.timings.items():
        print(f'  {name:<24} {seconds:6.1f}')
    return 0


def _stepper():
    count = [0]

    def step(text: str) -> None:
        count[0] += 1
        print(f'\n--- {count[0]}. {text}')
    return step
