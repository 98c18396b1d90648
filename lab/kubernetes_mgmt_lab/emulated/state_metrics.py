"""The one emulated part of the lab's monitoring: kube-state-metrics'
node series, read from the emulated cluster's state (pods cannot run in
the lab, so the real kube-state-metrics cannot either).

Served as Prometheus' text format with kube-state-metrics' names and
labels: ``kube_node_status_condition{node, condition, status}`` (one
series per status, 1 for the one the condition has) and
``kube_node_labels{node, label_<key>}`` for the label keys allowed, as
``--metric-labels-allowlist=nodes=[...]`` does.

Run as ``python -m kubernetes_mgmt_lab.emulated.state_metrics --address
IP --port N --cluster-dir D --allow KEY ...``.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kubernetes_mgmt_lab.emulated.view import ClusterView

STATUSES = ('true', 'false', 'unknown')
CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'


def series_label(key: str) -> str:
    """kube-state-metrics' name for a Kubernetes label key."""
    return 'label_' + re.sub(r'[^A-Za-z0-9_]', '_', key)


def _quoted(value: str) -> str:
    return value.replace('\\', '\\\\').replace('\n', '\\n').replace(
        '"', '\\"')


def _line(name: str, labels: dict[str, str], value: int) -> str:
    inner = ','.join(f'{k}="{_quoted(v)}"' for k, v in labels.items())
    return f'{name}{{{inner}}} {value}'


def render(nodes: Iterable[dict], allowed: Sequence[str]) -> str:
    conditions = ['# HELP kube_node_status_condition The condition of a '
                  'cluster node.', '# TYPE kube_node_status_condition gauge']
    labels = ['# HELP kube_node_labels Kubernetes labels converted to '
              'Prometheus labels.', '# TYPE kube_node_labels gauge']
    for node in nodes:
        name = node['metadata']['name']
        for condition in (node.get('status') or {}).get('conditions') or []:
            status = str(condition.get('status', 'Unknown')).lower()
            for each in STATUSES:
                conditions.append(_line('kube_node_status_condition', {
                    'node': name, 'condition': condition.get('type', ''),
                    'status': each}, int(each == status)))
        present = node['metadata'].get('labels') or {}
        labels.append(_line('kube_node_labels', {
            'node': name, **{series_label(k): present[k]
                             for k in allowed if k in present}}, 1))
    return '\n'.join(conditions + labels) + '\n'


def serve(address: str, port: int, cluster_dir: str,
          allowed: Sequence[str]) -> ThreadingHTTPServer:
    view = ClusterView(cluster_dir)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split('?')[0] != '/metrics':
                self.send_error(404)
                return
            body = render(view.nodes(), allowed).encode()
            self.send_response(200)
            self.send_header('Content-Type', CONTENT_TYPE)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass    # Prometheus scrapes every few seconds

    return ThreadingHTTPServer((address, port), Handler)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=__spec__.name if __spec__ else
                                     'state_metrics')
    parser.add_argument('--address', required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--cluster-dir', required=True)
    parser.add_argument('--allow', action='append', default=[])
    args = parser.parse_args(argv)
    serve(args.address, args.port, args.cluster_dir,
          args.allow).serve_forever()


if __name__ == '__main__':
    main()
