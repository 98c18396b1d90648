"""A master's kube-apiserver: a detached HTTPS server on the master's
IP:6443 serving the lab's Kubernetes API (``kube_api``) over the
cluster's shared state (``cluster_api``), with the serving certificate
kubeadm made and client certificates of the cluster CA.

Run as ``python -m kubernetes_mgmt_lab.emulated.apiserver --address IP
--port N --cert F --key F --client-ca F --pidfile F --cluster-dir D
--version V``; ``start``/``stop`` manage it from kubeadm.
"""
from __future__ import annotations

import argparse
import os
import signal
import ssl
import subprocess
import threading

from kubernetes_mgmt.remote.retry import wait_until
from kubernetes_mgmt_lab.emulated import kubeconfig
from kubernetes_mgmt_lab.emulated.cluster_api import ClusterApi
from kubernetes_mgmt_lab.kube_api import server as api_server
from kubernetes_mgmt_lab.tls_server import TlsHTTPServer

MODULE = 'kubernetes_mgmt_lab.emulated.apiserver'
START_TIMEOUT = 15.0


# On SIGTERM, as kube-apiserver does: stop listening, let the requests
# under way finish (watches are cut after this), then exit.
DRAIN_TIMEOUT = 5.0


def _cert_reloader(ctx: ssl.SSLContext, cert: str, key: str):
    """A check that loads the serving certificate again when its files
    change, as kube-apiserver does (``kubeadm certs renew`` then needs
    no restart for it; new connections get the new one)."""
    def stamps() -> tuple[float, float] | None:
        try:
            return os.stat(cert).st_mtime, os.stat(key).st_mtime
        except OSError:
            return None

    seen = [stamps()]

    def check() -> None:
        now = stamps()
        if now is None or now == seen[0]:
            return
        try:
            ctx.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError):
            return      # caught between the two files: next second
        seen[0] = now
    return check


def _watchdog(stopping: threading.Event, pidfile: str, cdir: str,
              tick=lambda: None) -> None:
    """Stop when our pid file is gone or rewritten (host reset or lab
    torn down), so no kube-apiserver outlives its host; ``tick`` runs at
    each look."""
    def orphaned() -> bool:
        tick()
        try:
            with open(pidfile, encoding='utf-8') as f:
                mine = f.read().strip() == str(os.getpid())
        except OSError:
            mine = False
        return not mine or not os.path.isdir(cdir)

    # Checked once a second for as long as the server runs.
    wait_until(lambda: stopping.is_set() or orphaned(),
               deadline=float('inf'), first=1.0, ceiling=1.0)
    stopping.set()


def serve(args: argparse.Namespace) -> None:
    # After an etcd restore the objects are etcd's, not the working
    # copy's: a starting API server reads them again, as a real one
    # fills its cache from etcd.
    from kubernetes_mgmt_lab.emulated import etcd_mirror
    etcd_mirror.reload_if_restored(args.cluster_dir)
    backend = ClusterApi(args.cluster_dir, args.version,
                         f'{args.address}:{args.port}')
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(args.client_ca)
    server = api_server.make_server(backend, ctx,
                                    (args.address, args.port))
    tmp = f'{args.pidfile}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(str(os.getpid()))
    os.replace(tmp, args.pidfile)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stopping.set())
    reload = _cert_reloader(ctx, args.cert, args.key)
    threading.Thread(target=_watchdog, daemon=True,
                     args=(stopping, args.pidfile, args.cluster_dir,
                           reload)).start()
    threading.Thread(target=server.serve_forever, daemon=True,
                     kwargs={'poll_interval': 0.5}).start()
    stopping.wait()
    _drain(server)


def _drain(server: TlsHTTPServer) -> None:
    traffic = server.RequestHandlerClass.traffic
    traffic.draining = True
    server.shutdown()
    server.socket.close()       # new connections are refused from now
    wait_until(lambda: traffic.in_flight == 0, deadline=DRAIN_TIMEOUT,
               ceiling=0.05)


def _our_pid(pidfile: str) -> int | None:
    try:
        with open(pidfile, encoding='utf-8') as f:
            pid = int(f.read().strip())
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            cmdline = f.read()
    except (OSError, ValueError):
        return None
    return pid if MODULE.encode() in cmdline else None


def running(pidfile: str) -> bool:
    return _our_pid(pidfile) is not None


def start(python: str, address: str, port: int, pki_dir: str,
          pidfile: str, log: str, cluster_dir: str, version: str) -> None:
    """Start detached (own session, no inherited descriptors, so an SSH
    channel that ran kubeadm can close) and wait until it accepts."""
    stop(pidfile)
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    argv = [python, '-m', MODULE, '--address', address, '--port',
            str(port), '--cert', os.path.join(pki_dir, 'apiserver.crt'),
            '--key', os.path.join(pki_dir, 'apiserver.key'),
            '--client-ca', os.path.join(pki_dir, 'ca.crt'),
            '--pidfile', pidfile, '--cluster-dir', cluster_dir,
            '--version', version]
    with open(log, 'ab') as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, close_fds=True,
                                start_new_session=True)
    def serving() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f'kube-apiserver exited: see {log}')
        return running(pidfile) and \
            kubeconfig.reachable(address, port, 0.5) is None

    if not wait_until(serving, deadline=START_TIMEOUT, ceiling=0.1):
        raise RuntimeError('kube-apiserver did not start in time')


def stop(pidfile: str, timeout: float = 10.0) -> None:
    pid = _our_pid(pidfile)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not _our_pid(pidfile)
                   or not os.path.exists(f'/proc/{pid}'),
                   deadline=timeout, ceiling=0.1)
        if os.path.exists(f'/proc/{pid}'):
            os.kill(pid, signal.SIGKILL)
    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='kube-apiserver')
    for name in ('address', 'cert', 'key', 'pidfile', 'cluster-dir',
                 'version'):
        parser.add_argument(f'--{name}', required=True)
    parser.add_argument('--client-ca')
    parser.add_argument('--port', type=int, default=6443)
    serve(parser.parse_args(argv))


if __name__ == '__main__':
    main()
