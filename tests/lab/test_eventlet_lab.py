"""The remote layer inside an eventlet-monkey-patched process.

Tacker's services have run under eventlet; the driver must work there as
well as in a plain threaded process (the other lab tests).
"""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.lab

SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()
    import json, sys
    from kubernetes_mgmt.engine.runner import run_each
    from kubernetes_mgmt.remote.hostkeys import HostKeyStore, StaticKeys
    from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions

    args = json.load(sys.stdin)
    login = Login(args['username'], args['password'])

    keys = HostKeyStore(authority=StaticKeys(args['host_keys']))
    with Sessions(keys) as sessions:
        def work(ip):
            session = sessions.get(Endpoint(ip, login))
            # Into the login user's home: private to each VM, so nothing
            # is left on the machine running the tests.
            session.upload('x' * 200000, args['upload_to'], step='upload')
            big = session.run(['head', '-c', '300000', '/dev/zero'],
                              step='big output')
            return [session.run(['hostname'], step='hostname').stdout
                    .strip(), len(big.stdout),
                    session.run(['whoami'], step='sudo', sudo=True)
                    .stdout.strip()]
        print(json.dumps(run_each('eventlet', args['ips'], work,
                                  label=str, parallel=4)))
''')


def test_parallel_ssh_works_under_eventlet_monkey_patching(lab):
    hosts = lab.state.hosts[:4]
    user = lab.state.username
    upload_to = f'/home/{user}/kmgmt-eventlet'
    args = {'username': user, 'password': lab.state.password,
            'ips': [h.ip for h in hosts], 'upload_to': upload_to,
            'host_keys': lab.host_keys().keys}
    started = time.time() - 1
    proc = subprocess.run([sys.executable, '-c', SCRIPT],
                          input=json.dumps(args), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results == [[h.name, 300000, 'root'] for h in hosts]
    for host in hosts:
        on_disk = lab.host_path(host.name, upload_to)
        assert os.path.getsize(on_disk) == 200000
        os.remove(on_disk)
        assert not _written_since(started, f'/tmp/kmgmt-eventlet-{host.ip}')


def _written_since(started: float, path: str) -> bool:
    # Older runs of this test left such files; only a new one counts.
    try:
        return os.stat(path).st_mtime >= started
    except FileNotFoundError:
        return False
