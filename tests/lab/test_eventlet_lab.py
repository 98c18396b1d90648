"""The remote layer inside an eventlet-monkey-patched process.

Tacker's services have run under eventlet; the driver must work there as
well as in a plain threaded process (the other lab tests).
"""
import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.lab

SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()
    import json, sys
    from kubernetes_mgmt.orchestration.parallel import for_each
    from kubernetes_mgmt.remote.hostkeys import HostKeyStore
    from kubernetes_mgmt.remote.ssh import Endpoint, Login, Sessions

    args = json.load(sys.stdin)
    login = Login(args['username'], args['password'])

    with Sessions(HostKeyStore()) as sessions:
        def work(ip):
            session = sessions.get(Endpoint(ip, login))
            session.upload('x' * 200000, '/tmp/kmgmt-eventlet-' + ip,
                           step='upload')
            big = session.run(['head', '-c', '300000', '/dev/zero'],
                              step='big output')
            return [session.run(['hostname'], step='hostname').stdout
                    .strip(), len(big.stdout),
                    session.run(['whoami'], step='sudo', sudo=True)
                    .stdout.strip()]
        print(json.dumps(for_each(args['ips'], work, phase='eventlet',
                                  label=str, parallel=4)))
''')


def test_parallel_ssh_works_under_eventlet_monkey_patching(lab):
    hosts = lab.state.hosts[:4]
    args = {'username': lab.state.username, 'password': lab.state.password,
            'ips': [h.ip for h in hosts]}
    proc = subprocess.run([sys.executable, '-c', SCRIPT],
                          input=json.dumps(args), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results == [[h.name, 300000, 'root'] for h in hosts]
