"""``kubeadm certs check-expiration`` and ``kubeadm certs renew``: the
control-plane certificates of this node, judged and renewed by the lab's
clock (``labclock``), with kubeadm's names, table and JSON/YAML shape
(output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo)."""
from __future__ import annotations

import base64
import datetime
import json
import os
from dataclasses import dataclass

from kubernetes_mgmt_lab import pki
from kubernetes_mgmt_lab.emulated import labclock, recorder, yamlio
from kubernetes_mgmt_lab.emulated.flags import Parsed
from kubernetes_mgmt_lab.emulated.host import host_path
from kubernetes_mgmt_lab.emulated.kubeadm_cli import STACK_HINT
from kubernetes_mgmt_lab.emulated.runner import CommandError, Context

K8S = '/etc/kubernetes'
PKI = '/etc/kubernetes/pki'
OUTPUT_API = 'output.kubeadm.k8s.io/v1alpha3'
DATE_FORMAT = '%b %d, %Y %H:%M UTC'
RESTART_HINT = ('\nDone renewing certificates. You must restart the '
                'kube-apiserver, kube-controller-manager, kube-scheduler '
                'and etcd, so that they can use the new certificates.')


@dataclass(frozen=True)
class CertSpec:
    name: str           # kubeadm's name for it
    long_name: str      # what "renew" prints
    ca: str             # the CA that signs it
    path: str           # a .crt file, or a kubeconfig (.conf)

    @property
    def kubeconfig(self) -> bool:
        return self.path.endswith('.conf')


CAS = {'ca': f'{PKI}/ca', 'etcd-ca': f'{PKI}/etcd/ca',
       'front-proxy-ca': f'{PKI}/front-proxy-ca'}
_EMBEDDED = 'certificate embedded in the kubeconfig file for the'
CERTS = (
    CertSpec('admin.conf', f'{_EMBEDDED} admin to use and for kubeadm '
             'itself', 'ca', f'{K8S}/admin.conf'),
    CertSpec('apiserver', 'certificate for serving the Kubernetes API',
             'ca', f'{PKI}/apiserver.crt'),
    CertSpec('apiserver-etcd-client', 'certificate the apiserver uses to '
             'access etcd', 'etcd-ca', f'{PKI}/apiserver-etcd-client.crt'),
    CertSpec('apiserver-kubelet-client', 'certificate for the API server '
             'to connect to kubelet', 'ca',
             f'{PKI}/apiserver-kubelet-client.crt'),
    CertSpec('controller-manager.conf', f'{_EMBEDDED} controller manager '
             'to use', 'ca', f'{K8S}/controller-manager.conf'),
    CertSpec('etcd-healthcheck-client', 'certificate for liveness probes '
             'to healthcheck etcd', 'etcd-ca',
             f'{PKI}/etcd/healthcheck-client.crt'),
    CertSpec('etcd-peer', 'certificate for etcd nodes to communicate with '
             'each other', 'etcd-ca', f'{PKI}/etcd/peer.crt'),
    CertSpec('etcd-server', 'certificate for serving etcd', 'etcd-ca',
             f'{PKI}/etcd/server.crt'),
    CertSpec('front-proxy-client', 'certificate for the front proxy '
             'client', 'front-proxy-ca', f'{PKI}/front-proxy-client.crt'),
    CertSpec('scheduler.conf', f'{_EMBEDDED} scheduler manager to use',
             'ca', f'{K8S}/scheduler.conf'),
    CertSpec('super-admin.conf', f'{_EMBEDDED} super-admin', 'ca',
             f'{K8S}/super-admin.conf'),
)


# ---- reading and writing one certificate ------------------------------

def _kubeconfig_user(doc: dict) -> dict:
    users = doc.get('users') or [{}]
    return users[0].setdefault('user', {})


def read_cert(spec: CertSpec) -> bytes | None:
    """The certificate's PEM, or None when the node has none."""
    path = host_path(spec.path)
    if not os.path.exists(path):
        return None
    if not spec.kubeconfig:
        return pki.read(path)
    with open(path, encoding='utf-8') as f:
        data = _kubeconfig_user(yamlio.load(f) or {}).get(
            'client-certificate-data')
    return base64.b64decode(data) if data else None


def _write_cert(spec: CertSpec, cert: bytes, key: bytes) -> None:
    path = host_path(spec.path)
    if not spec.kubeconfig:
        pki.write(path, cert)
        pki.write(path[:-len('.crt')] + '.key', key, private=True)
        return
    with open(path, encoding='utf-8') as f:
        doc = yamlio.load(f)
    user = _kubeconfig_user(doc)
    user['client-certificate-data'] = base64.b64encode(cert).decode()
    user['client-key-data'] = base64.b64encode(key).decode()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(yamlio.dump(doc, sort_keys=False))


def _ca_pair(ca: str) -> tuple[bytes, bytes] | None:
    base = host_path(CAS[ca])
    try:
        return pki.read(f'{base}.crt'), pki.read(f'{base}.key')
    except FileNotFoundError:
        return None


def renew_one(ctx: Context, spec: CertSpec) -> str:
    """Renew ``spec`` from the node's CA; what kubeadm prints for it."""
    cert = read_cert(spec)
    if cert is None:
        return f'MISSING! {spec.long_name}'
    pair = _ca_pair(spec.ca)
    if pair is None:
        return (f'Detected external {spec.ca}, {spec.long_name} can\'t be '
                'renewed')
    new_cert, new_key = pki.renew(cert, pair[0], pair[1],
                                  now=labclock.now(ctx))
    _write_cert(spec, new_cert, new_key)
    return f'{spec.long_name} renewed'


def renew_all(ctx: Context) -> list[str]:
    """Renew every control-plane certificate the node has (what an
    upgrade does unless --certificate-renewal=false)."""
    lines = [renew_one(ctx, spec) for spec in CERTS]
    recorder.note(ctx.cluster_dir, ctx.host.name, 'certs-renewed',
                  names=[s.name for s in CERTS if read_cert(s)])
    return lines


# ---- check-expiration ----------------------------------------------------

def _entry(name: str, pem: bytes | None, now: datetime.datetime,
           ca: str | None) -> dict:
    # kubeadm's field order; caName is omitted for a CA (omitempty).
    entry: dict = {'name': name, 'expirationDate': None,
                   'residualTime': 0, 'externallyManaged': False}
    if pem is not None:
        expires = pki.not_after(pem)
        entry['expirationDate'] = expires.strftime('%Y-%m-%dT%H:%M:%SZ')
        entry['residualTime'] = int((expires - now).total_seconds())
    if ca:
        entry['caName'] = ca
    entry['missing'] = pem is None
    return entry


def expiration_info(ctx: Context) -> dict:
    """kubeadm's CertificateExpirationInfo for this node, now (lab
    clock)."""
    now = labclock.now(ctx)
    certs = [_entry(s.name, read_cert(s), now, s.ca) for s in CERTS]
    cas = []
    for name, base in CAS.items():
        path = host_path(f'{base}.crt')
        pem = pki.read(path) if os.path.exists(path) else None
        cas.append(_entry(name, pem, now, None))
    return {'kind': 'CertificateExpirationInfo', 'apiVersion': OUTPUT_API,
            'certificates': certs, 'certificateAuthorities': cas}


def short_duration(seconds: int) -> str:
    """apimachinery's ShortHumanDuration, as kubeadm prints it."""
    if seconds < -1:
        return '<invalid>'
    if seconds < 0:
        return '0s'
    if seconds < 60:
        return f'{seconds}s'
    if seconds < 3600:
        return f'{seconds // 60}m'
    hours = seconds // 3600
    if hours < 24:
        return f'{hours}h'
    if hours < 24 * 365:
        return f'{hours // 24}d'
    return f'{hours // 24 // 365}y'


def _table(rows: list[list[str]]) -> list[str]:
    """Go's tabwriter with kubeadm's settings (padding 3, min width 10):
    each column as wide as its widest cell plus three spaces."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell) + 3, 10)
    return [''.join(cell.ljust(widths[i]) if i < len(row) - 1 else cell
                    for i, cell in enumerate(row)) for row in rows]


def _date(entry: dict) -> str:
    moment = datetime.datetime.strptime(entry['expirationDate'],
                                        '%Y-%m-%dT%H:%M:%SZ')
    return moment.strftime(DATE_FORMAT)


def render_text(info: dict) -> str:
    certs = [['CERTIFICATE', 'EXPIRES', 'RESIDUAL TIME',
              'CERTIFICATE AUTHORITY', 'EXTERNALLY MANAGED']]
    for c in info['certificates']:
        certs.append([f'!MISSING! {c["name"]}', '', '', '', ''] if
                     c['missing'] else
                     [c['name'], _date(c), short_duration(c['residualTime']),
                      c['caName'], 'no'.ljust(8)])
    cas = [['CERTIFICATE AUTHORITY', 'EXPIRES', 'RESIDUAL TIME',
            'EXTERNALLY MANAGED']]
    for c in info['certificateAuthorities']:
        cas.append([f'!MISSING! {c["name"]}', '', '', ''] if c['missing']
                   else [c['name'], _date(c),
                         short_duration(c['residualTime']), 'no'.ljust(8)])
    return '\n'.join([*_table(certs), '', *_table(cas)])


def check_expiration(ctx: Context, opts: Parsed) -> int:
    if opts.args:
        raise CommandError(f'unknown command "{opts.args[0]}" for "kubeadm '
                           f'certs check-expiration"\n{STACK_HINT}')
    info = expiration_info(ctx)
    out = opts.get('output') or 'text'
    if out == 'json':
        ctx.out(json.dumps(info, indent=4))
    elif out == 'yaml':
        ctx.out(yamlio.dump(info).rstrip('\n'))
    elif out == 'text':
        ctx.out('[check-expiration] Reading configuration from the '
                'cluster...\n[check-expiration] FYI: You can look at this '
                "config file with 'kubectl -n kube-system get cm "
                "kubeadm-config -o yaml'\n")
        ctx.out(render_text(info))
    else:
        raise CommandError('could not construct output printer: unable to '
                           f'match a printer suitable for the output format '
                           f'"{out}", allowed formats are: json,text,yaml\n'
                           f'{STACK_HINT}')
    return 0


# ---- renew -----------------------------------------------------------------

def renew(ctx: Context, opts: Parsed) -> int:
    names = [s.name for s in CERTS]
    if len(opts.args) != 1 or opts.args[0] not in (*names, 'all'):
        what = opts.args[0] if opts.args else ''
        if not what:
            ctx.out('Usage:\n  kubeadm certs renew [command]\n\nAvailable '
                    'Commands:\n  ' + '\n  '.join(['all', *names]))
            return 0
        raise CommandError(f'unknown command "{what}" for "kubeadm certs '
                           f'renew"\n{STACK_HINT}')
    if os.geteuid() != 0:
        raise CommandError('open /etc/kubernetes/pki/ca.key: permission '
                           f'denied\n{STACK_HINT}')
    ctx.out('[renew] Reading configuration from the cluster...\n[renew] '
            "FYI: You can look at this config file with 'kubectl -n "
            "kube-system get cm kubeadm-config -o yaml'\n")
    if opts.args[0] == 'all':
        for line in renew_all(ctx):
            ctx.out(line)
        ctx.out(RESTART_HINT)
        return 0
    spec = next(s for s in CERTS if s.name == opts.args[0])
    ctx.out(renew_one(ctx, spec))
    recorder.note(ctx.cluster_dir, ctx.host.name, 'certs-renewed',
                  names=[spec.name])
    return 0
