"""The NFS server stand-ins: exportfs, the nfs-server unit and the
packages that bring them (nfs-kernel-server, nfs-common)."""
from __future__ import annotations

import os

import pytest

from kubernetes_mgmt_lab.emulated import exports, testing

# What exportfs shows for the options the install script uses.
RW = 'sync,wdelay,hide,no_subtree_check,sec=sys,rw,secure,no_root_squash,' \
     'no_all_squash'
DEFAULTS = 'sync,wdelay,hide,no_subtree_check,sec=sys,ro,secure,' \
           'root_squash,no_all_squash'


@pytest.fixture
def host(tmp_path):
    h = testing.make_host(str(tmp_path), str(tmp_path / 'cluster'),
                          'storage-0', testing.random_loopback_base() + '5',
                          'storage')
    yield h
    testing.cleanup([h])


@pytest.fixture
def server(host):
    host.run('apt-get', 'install', '-y', 'nfs-kernel-server', check=True)
    return host


@pytest.fixture
def dirs(tmp_path):
    made = []
    for name in ('pv1', 'pv2', 'pv3'):
        path = tmp_path / 'volume' / 'nfs' / name
        path.mkdir(parents=True)
        made.append(str(path))
    return made


def write(host, path: str, text: str) -> None:
    real = host.path(path)
    os.makedirs(os.path.dirname(real), exist_ok=True)
    with open(real, 'w', encoding='utf-8') as f:
        f.write(text)


def active(host) -> list[str]:
    return host.run('exportfs', '-s', check=True).stdout.splitlines()


# -- packages and the unit ---------------------------------------------------

def test_exportfs_is_missing_until_the_server_package_is_installed(host):
    missing = host.run('exportfs', '-s')
    assert (missing.returncode, missing.stderr.strip()) == (
        127, 'exportfs: command not found')
    host.run('apt-get', 'install', '-y', 'nfs-kernel-server', check=True)
    assert host.run('exportfs', '-s', check=True).stdout == ''
    # The package's /etc/exports lists nothing.
    with open(host.path('/etc/exports'), encoding='utf-8') as f:
        text = f.read()
    assert text and exports.parse(text, '/etc/exports').exports == []


def test_server_package_keeps_an_existing_etc_exports(host, dirs):
    write(host, '/etc/exports', f'{dirs[0]} *(ro,no_subtree_check)\n')
    host.run('apt-get', 'install', '-y', 'nfs-kernel-server', check=True)
    # Debian starts the service on install: its exportfs -r ran.
    assert active(host) == [
        f'{dirs[0]}  *(sync,wdelay,hide,no_subtree_check,sec=sys,ro,'
        'secure,root_squash,no_all_squash)']


def test_nfs_server_unit_and_its_alias(server):
    def query(verb: str, unit: str) -> tuple[int, str]:
        proc = server.run('systemctl', verb, unit)
        return proc.returncode, proc.stdout.strip()

    assert query('is-active', 'nfs-server') == (0, 'active')
    assert query('is-enabled', 'nfs-server') == (0, 'enabled')
    server.run('systemctl', 'disable', '--now', 'nfs-kernel-server',
               check=True)
    assert query('is-active', 'nfs-server.service') == (3, 'inactive')
    assert query('is-enabled', 'nfs-server') == (1, 'disabled')
    server.run('systemctl', 'enable', '--now', 'nfs-server', check=True)
    assert query('is-active', 'nfs-kernel-server') == (0, 'active')
    for verb in ('restart', 'reload', 'try-restart'):
        server.run('systemctl', verb, 'nfs-server', check=True)
    assert query('is-active', 'nfs-server') == (0, 'active')


def test_unit_start_exports_the_files_and_stop_unexports(server, dirs):
    write(server, '/etc/exports.d/k.exports',
          f'{dirs[0]} 10.0.0.0/24(rw,sync,no_subtree_check,'
          'no_root_squash)\n')
    assert active(server) == []         # written, not yet exported
    server.run('systemctl', 'reload', 'nfs-server', check=True)
    assert active(server) == [f'{dirs[0]}  10.0.0.0/24({RW})']
    server.run('systemctl', 'stop', 'nfs-server', check=True)
    assert active(server) == []
    server.run('systemctl', 'start', 'nfs-server', check=True)
    assert len(active(server)) == 1
    server.run('exportfs', '-ua', check=True)
    # Starting a running unit runs nothing: the table stays empty.
    server.run('systemctl', 'start', 'nfs-server', check=True)
    assert active(server) == []
    server.run('apt-get', 'remove', '-y', 'nfs-kernel-server', check=True)
    assert server.run('exportfs', '-s').returncode == 127


def test_nfs_common_is_recorded_for_dpkg_query(host):
    host.run('apt-get', 'install', '-y', 'nfs-common', check=True)
    out = host.run('dpkg-query', '-W', '-f=${Package} ${Status} '
                   '${Version}\\n', 'nfs-common', check=True).stdout
    assert out == 'nfs-common install ok installed 1.0-1\n'
    # The client alone brings no server.
    assert host.run('exportfs', '-s').returncode == 127


# -- exportfs ----------------------------------------------------------------

def test_reexport_syncs_the_table_with_the_files(server, dirs):
    write(server, '/etc/exports.d/kubernetes-mgmt.exports',
          '# managed\n'
          f'{dirs[0]} 10.0.0.0/24(rw,sync,no_subtree_check,no_root_squash)'
          ' 10.1.0.5(rw,sync,no_subtree_check,no_root_squash)\n'
          '\n'
          f'{dirs[1]} \\\n'
          '    10.0.0.0/24(rw,sync,no_subtree_check,no_root_squash)'
          '  # trailing comment\n')
    server.run('exportfs', '-ra', check=True)
    assert active(server) == [
        f'{dirs[0]}  10.1.0.5({RW})',        # hosts list before subnets
        f'{dirs[0]}  10.0.0.0/24({RW})',
        f'{dirs[1]}  10.0.0.0/24({RW})']
    # An ad hoc export stays with -a, goes with -r.
    server.run('exportfs', '-o', 'ro,no_subtree_check',
               f'10.2.0.0/16:{dirs[2]}', check=True)
    assert f'{dirs[2]}  10.2.0.0/16({DEFAULTS})' in active(server)
    server.run('exportfs', '-a', check=True)
    assert len(active(server)) == 4
    write(server, '/etc/exports.d/kubernetes-mgmt.exports',
          f'{dirs[1]} 10.0.0.0/24(rw,sync,no_subtree_check,'
          'no_root_squash)\n')
    verbose = server.run('exportfs', '-rav', check=True)
    assert verbose.stdout == f'exporting 10.0.0.0/24:{dirs[1]}\n'
    assert active(server) == [f'{dirs[1]}  10.0.0.0/24({RW})']


def test_missing_directory_fails_like_exportfs(server, dirs, tmp_path):
    gone = str(tmp_path / 'gone')
    write(server, '/etc/exports',
          f'{gone} *(rw,no_subtree_check)\n'
          f'{dirs[0]} *(rw,no_subtree_check)\n')
    proc = server.run('exportfs', '-ra')
    assert proc.returncode == 1
    assert proc.stderr == (f'exportfs: Failed to stat {gone}: No such file '
                           'or directory\n')
    assert [line.split()[0] for line in active(server)] == [dirs[0]]


def test_unexport_one_and_all(server, dirs):
    write(server, '/etc/exports',
          f'{dirs[0]} a(no_subtree_check) b(no_subtree_check)\n')
    server.run('exportfs', '-ra', check=True)
    server.run('exportfs', '-u', f'a:{dirs[0]}', check=True)
    assert [line.split()[1].split('(')[0] for line in active(server)] == \
        ['b']
    again = server.run('exportfs', '-u', f'a:{dirs[0]}')
    assert again.returncode == 1
    assert f"Could not find 'a:{dirs[0]}' to unexport." in again.stderr
    server.run('exportfs', '-ua', check=True)
    assert active(server) == []


def test_listing_formats(server, dirs):
    write(server, '/etc/exports',
          f'/tmp -rw,no_subtree_check\n'
          f'{dirs[0]} 10.0.0.0/24(no_subtree_check,async,anonuid=1000)\n')
    proc = server.run('exportfs', '-ra', check=True)
    # A line without clients exports to the world, with a warning.
    assert 'No host name given with /tmp' in proc.stderr
    plain = server.run('exportfs', check=True).stdout
    assert plain == f'/tmp          \t<world>\n{dirs[0]}\n\t\t10.0.0.0/24\n'
    verbose = server.run('exportfs', '-v', check=True).stdout.splitlines()
    assert verbose[0] == ('/tmp          \t<world>(sync,wdelay,hide,'
                          'no_subtree_check,sec=sys,rw,secure,root_squash,'
                          'no_all_squash)')
    assert verbose[2] == ('\t\t10.0.0.0/24(async,wdelay,hide,'
                          'no_subtree_check,anonuid=1000,sec=sys,ro,secure,'
                          'root_squash,no_all_squash)')
    assert active(server)[0].startswith('/tmp  *(')


def test_bad_arguments_and_non_root_refusals(server, dirs):
    bad = server.run('exportfs', '-z')
    assert bad.returncode == 1 and "invalid option -- 'z'" in bad.stderr
    extra = server.run('exportfs', '-a', f'*:{dirs[0]}')
    assert extra.returncode == 1 and 'extra arguments' in extra.stderr
    both = server.run('exportfs', '-ru')
    assert both.returncode == 1 and 'incompatible' in both.stderr
    syntax = server.run('exportfs', 'no-path')
    assert syntax.returncode == 1 and 'Invalid exporting' in syntax.stderr
    assert server.run('exportfs', '-f').returncode == 0


# -- parsing -----------------------------------------------------------------

def test_parse_quoted_paths_defaults_and_warnings():
    parsed = exports.parse(
        '"/srv/with space" -rw host1(no_subtree_check) host2(ro,'
        'subtree_check)\n'
        '/srv/plain host3\n', '/etc/exports')
    assert [(e.path, e.client) for e in parsed.exports] == [
        ('/srv/with space', 'host1'), ('/srv/with space', 'host2'),
        ('/srv/plain', 'host3')]
    assert ',rw,' in parsed.exports[0].options
    assert ',ro,' in parsed.exports[1].options
    assert 'no_subtree_check' not in parsed.exports[1].options
    # Only the export without a subtree option draws the warning.
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith(
        '/etc/exports:2: Neither \'subtree_check\' or \'no_subtree_check\' '
        'specified for export "host3:/srv/plain"')


def test_parse_rejects_unknown_keywords_and_relative_paths():
    parsed = exports.parse('/srv h(rw,frobnicate)\nsrv h(rw)\n', 'x')
    assert parsed.exports == []
    assert parsed.errors == ['x:1: unknown keyword "frobnicate"',
                             'x:2: bad export point "srv"']


def test_duplicate_entries_keep_the_first(server, dirs):
    write(server, '/etc/exports', f'{dirs[0]} h(rw,no_subtree_check)\n')
    write(server, '/etc/exports.d/a.exports',
          f'{dirs[0]} h(ro,no_subtree_check)\n')
    write(server, '/etc/exports.d/.hidden.exports',
          f'{dirs[1]} h(ro,no_subtree_check)\n')
    write(server, '/etc/exports.d/ignored.conf',
          f'{dirs[2]} h(ro,no_subtree_check)\n')
    proc = server.run('exportfs', '-ra', check=True)
    assert 'duplicated export entries' in proc.stderr
    assert active(server) == [
        f'{dirs[0]}  h(sync,wdelay,hide,no_subtree_check,sec=sys,rw,'
        'secure,root_squash,no_all_squash)']
