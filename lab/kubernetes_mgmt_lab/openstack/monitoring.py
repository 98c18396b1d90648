"""The site's monitoring, real: Debian's Prometheus and Alertmanager.

Prometheus scrapes the node exporter of every lab VM (the targets file
the driver writes, ``[kubernetes_mgmt] monitoring_targets_dir``) and the
kube-state-metrics stand-in of every lab cluster (a file per lab, written
when the lab starts it), evaluates the product's auto-heal rules with
the lab's short durations, and sends its alerts to Alertmanager, which
posts them to Tacker's ``/alert/auto_healing``. Every file is in the
root; both daemons listen on 127.0.0.1 only, Alertmanager without its
cluster port (sites on one machine must not gossip)."""
from __future__ import annotations

import json
import os
import urllib.request

import yaml

from kubernetes_mgmt.monitoring import rules
from kubernetes_mgmt_lab.net import free_port
from kubernetes_mgmt_lab.openstack import processes
from kubernetes_mgmt_lab.openstack.layout import Root

HOST = '127.0.0.1'
PROMETHEUS = '/usr/bin/prometheus'
ALERTMANAGER = '/usr/bin/prometheus-alertmanager'
DEBIAN = {PROMETHEUS: 'prometheus',
          ALERTMANAGER: 'prometheus-alertmanager',
          '/usr/bin/prometheus-node-exporter': 'prometheus-node-exporter'}
PREFERRED_PORTS = {'prometheus': 19090, 'alertmanager': 19093}
# Short enough for a test to see a heal within a minute or two.
LAB_TIMING = rules.Timing(vm_silent_for='20s', not_ready_for='20s')
SCRAPE_INTERVAL = '5s'
NODE_EXPORTER_PORT = 9100
KSM_JOB = 'kube-state-metrics'


def targets_dir(root: Root) -> str:
    """The driver's monitoring_targets_dir on this site."""
    return root.of('monitoring', 'targets')


def ksm_dir(root: Root) -> str:
    return root.of('monitoring', 'kube-state-metrics')


def ports() -> dict[str, int]:
    return {name: free_port(HOST, preferred)
            for name, preferred in PREFERRED_PORTS.items()}


def url(port: int) -> str:
    return f'http://{HOST}:{port}'


def configure(root: Root, ports: dict[str, int], tacker_url: str) -> None:
    """Prometheus' and Alertmanager's files under ``root``."""
    for path in (targets_dir(root), ksm_dir(root),
                 root.of('monitoring', 'prometheus-data'),
                 root.of('monitoring', 'alertmanager-data')):
        os.makedirs(path, exist_ok=True)
    _write(root.of('monitoring', 'rules.yml'),
           rules.dump(rules.rule_groups(LAB_TIMING)))
    _write(root.of('monitoring', 'alertmanager.yml'),
           rules.dump(_quick(rules.alertmanager_config(tacker_url))))
    _write(root.of('monitoring', 'prometheus.yml'),
           yaml.safe_dump(_prometheus(root, ports), sort_keys=False))


def _quick(config: dict) -> dict:
    """The product's route, sent without the production waits."""
    route = config['route']['routes'][0]
    route.update(group_wait='1s', group_interval='5s', repeat_interval='30s')
    return config


def _prometheus(root: Root, ports: dict[str, int]) -> dict:
    def job(name: str, directory: str) -> dict:
        return {'job_name': name, 'file_sd_configs': [{
            'files': [os.path.join(directory, '*.json')],
            'refresh_interval': SCRAPE_INTERVAL}]}
    return {'global': {'scrape_interval': SCRAPE_INTERVAL,
                       'scrape_timeout': '4s',
                       'evaluation_interval': SCRAPE_INTERVAL},
            'rule_files': [root.of('monitoring', 'rules.yml')],
            'alerting': {'alertmanagers': [{'static_configs': [{
                'targets': [f'{HOST}:{ports["alertmanager"]}']}]}]},
            'scrape_configs': [job(rules.NODE_JOB, targets_dir(root)),
                               job(KSM_JOB, ksm_dir(root))]}


def _write(path: str, text: str) -> None:
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def start_alertmanager(root: Root, port: int) -> int:
    log = root.log('alertmanager')
    pid = processes.spawn([
        ALERTMANAGER,
        f'--config.file={root.of("monitoring", "alertmanager.yml")}',
        f'--storage.path={root.of("monitoring", "alertmanager-data")}',
        f'--web.listen-address={HOST}:{port}',
        '--cluster.listen-address='], log)
    processes.wait_ready('alertmanager', pid, lambda: _ready(port), log)
    return pid


def start_prometheus(root: Root, port: int) -> int:
    log = root.log('prometheus')
    pid = processes.spawn([
        PROMETHEUS,
        f'--config.file={root.of("monitoring", "prometheus.yml")}',
        f'--storage.tsdb.path={root.of("monitoring", "prometheus-data")}',
        '--storage.tsdb.retention.time=2h',
        f'--web.listen-address={HOST}:{port}'], log)
    processes.wait_ready('prometheus', pid, lambda: _ready(port), log)
    return pid


def _ready(port: int) -> bool:
    """``/-/ready`` answers 200; Prometheus answers 503 while it starts
    (its API too)."""
    try:
        with urllib.request.urlopen(f'{url(port)}/-/ready',  # noqa: S310
                                    timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def publish_ksm(root: Root, lab_name: str, address: str, port: int) -> None:
    """A lab's kube-state-metrics stand-in, for Prometheus to find."""
    os.makedirs(ksm_dir(root), exist_ok=True)
    path = os.path.join(ksm_dir(root), f'{lab_name}.json')
    temporary = path + '.tmp'
    _write(temporary, json.dumps([{'targets': [f'{address}:{port}'],
                                   'labels': {'lab': lab_name}}]))
    os.replace(temporary, path)


def forget_ksm(root: Root, lab_name: str) -> None:
    try:
        os.unlink(os.path.join(ksm_dir(root), f'{lab_name}.json'))
    except FileNotFoundError:
        pass
