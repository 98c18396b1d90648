"""The shared cluster state: one JSON file in the cluster directory,
read and written under ``fcntl.flock`` by every emulated command on
every lab host (they all see the machine's file system there).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator

STATE_FILE = 'state.json'
# Emulated commands run as root and as the lab's login user alike; both
# must be able to update the shared files (rename needs a writable dir).
SHARED_FILE_MODE = 0o666


def _empty() -> dict:
    return {
        'generation': 0,
        'rv': 0,                # resourceVersion counter
        'cluster': {'initialized': False},
        'objects': {},          # kind -> list of Kubernetes objects
        'hosts': {},            # host name -> {kubelet, apiserver}
    }


@contextlib.contextmanager
def _flock(cluster_dir: str, name: str, mode: int) -> Iterator[None]:
    os.makedirs(cluster_dir, exist_ok=True)
    path = os.path.join(cluster_dir, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, SHARED_FILE_MODE)
    with os.fdopen(fd, 'r+') as lock:
        _share(lock.fileno())
        fcntl.flock(lock, mode)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load_json(path: str, default):
    try:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def save_json(path: str, data) -> None:
    # Write then rename: readers never see half a file. One compact
    # json.dumps, because only that uses json's C encoder (json.dump and
    # indent take the pure-Python one): every mutating command saves the
    # cluster's state. jq shows it readably.
    text = json.dumps(data, sort_keys=True, separators=(',', ':'))
    tmp = f'{path}.{os.getpid()}.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        _share(f.fileno())
        f.write(text)
    os.replace(tmp, path)


def _share(fd: int) -> None:
    with contextlib.suppress(PermissionError):  # not the owner: already set
        os.fchmod(fd, SHARED_FILE_MODE)


def _path(cluster_dir: str) -> str:
    return os.path.join(cluster_dir, STATE_FILE)


def read(cluster_dir: str) -> dict:
    with _flock(cluster_dir, 'state.lock', fcntl.LOCK_SH):
        return load_json(_path(cluster_dir), None) or _empty()


@contextlib.contextmanager
def mutate(cluster_dir: str) -> Iterator[dict]:
    """Yield the state under an exclusive lock; save it on success (its
    changed objects go to the cluster's etcd too, see ``_save``)."""
    with _flock(cluster_dir, 'state.lock', fcntl.LOCK_EX):
        state = load_json(_path(cluster_dir), None) or _empty()
        before = _objects_index(state)
        yield state
        _save(cluster_dir, state, before, strict=False)


@contextlib.contextmanager
def exclusive(cluster_dir: str, strict: bool = False, mirrored: bool = True
              ) -> Iterator[tuple[dict, Callable[[], None]]]:
    """The state under an exclusive lock, and the function that saves it
    (for a caller that saves only when something changed). ``strict``:
    the save fails (``etcd_mirror.MirrorError``) when etcd does not take
    the change; ``mirrored=False``: etcd is not written."""
    with _flock(cluster_dir, 'state.lock', fcntl.LOCK_EX):
        state = load_json(_path(cluster_dir), None) or _empty()
        before = _objects_index(state) if mirrored else None

        def save() -> None:
            if mirrored:
                _save(cluster_dir, state, before, strict)
            else:
                save_json(_path(cluster_dir), state)
        yield state, save


def _has_etcd(state: dict) -> bool:
    return any(rec.get('etcd') for rec in
               (state.get('hosts') or {}).values())


def _objects_index(state: dict) -> dict | None:
    """Each object's resourceVersion, when the cluster has an etcd to
    keep them in."""
    if not _has_etcd(state):
        return None
    from kubernetes_mgmt_lab.emulated import etcd_mirror
    return etcd_mirror.index(state)


def _save(cluster_dir: str, state: dict, before: dict | None,
          strict: bool) -> None:
    if _has_etcd(state):
        # Imported only here: TLS and HTTP cost a short command's start.
        from kubernetes_mgmt_lab.emulated import etcd_mirror
        etcd_mirror.sync(cluster_dir, state, before, strict)
    save_json(_path(cluster_dir), state)


@contextlib.contextmanager
def locked_file(cluster_dir: str, name: str, default) -> Iterator:
    """Any other JSON file of the cluster dir (faults, config)."""
    with _flock(cluster_dir, f'{name}.lock', fcntl.LOCK_EX):
        path = os.path.join(cluster_dir, name)
        data = load_json(path, default)
        yield data
        save_json(path, data)


EVENT_LOG = 'events.jsonl'


def record_event(cluster_dir: str, host: str, argv: list[str],
                 started: float, rc: int) -> None:
    """A mutating command that ended, appended to the event log: no lock
    and no rewrite of the cluster state (17 VMs' commands end at once)."""
    append_line(os.path.join(cluster_dir, EVENT_LOG),
                json.dumps({'host': host, 'argv': list(argv),
                            'time': started, 'end': time.time(),
                            'rc': rc}) + '\n')


def read_events(cluster_dir: str) -> list[dict]:
    return read_lines(os.path.join(cluster_dir, EVENT_LOG))


ARGV_LOG = 'argv.jsonl'


def record_argv(cluster_dir: str, host: str, argv: list[str]) -> None:
    """Append the argv of a command being started, whatever it does (the
    events list keeps only mutating ones): tests check that no command
    ever had a secret on its command line."""
    append_line(os.path.join(cluster_dir, ARGV_LOG),
                json.dumps({'host': host, 'argv': list(argv),
                            'time': time.time()}) + '\n')


def append_line(path: str, line: str) -> None:
    """One write, O_APPEND: concurrent writers never interleave lines.
    The directory is made only when missing (every command appends)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, SHARED_FILE_MODE)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, SHARED_FILE_MODE)
    try:
        _share(fd)
        os.write(fd, line.encode())
    finally:
        os.close(fd)


CPU_LOG = 'cpu.jsonl'


def record_cpu(cluster_dir: str, host: str, command: str,
               seconds: float) -> None:
    """What an emulated command cost: the benchmarks sum it by command."""
    append_line(os.path.join(cluster_dir, CPU_LOG),
                json.dumps({'host': host, 'command': command,
                            'cpu': round(seconds, 4)}) + '\n')


def read_cpu_log(cluster_dir: str) -> list[dict]:
    return read_lines(os.path.join(cluster_dir, CPU_LOG))


def read_lines(path: str) -> list[dict]:
    """The JSON records of a file ``append_line`` wrote (none yet: [])."""
    try:
        with open(path, encoding='utf-8') as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def read_argv_log(cluster_dir: str) -> list[dict]:
    return read_lines(os.path.join(cluster_dir, ARGV_LOG))
