"""Format checks of single request values."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.params import checks
from kubernetes_mgmt.params.paths import render, show

GOOD = [
    (checks.resource_name, ['masterNode_CP1', 'vip_CP', 'a.b-c', 'x']),
    (checks.user_name, ['ubuntu', '_svc', 'Admin-1', 'u' * 32]),
    (checks.password, ['ubuntu', 'p a$s`w;o"r\'d', 'x']),
    (checks.vim_name, ['kubernetes_vim', 'My VIM #1']),
    (checks.python_class, ['KubernetesClusterUserData', '_X1']),
    (checks.package_path, ['Scripts/install_k8s_cluster.sh',
                           './UserData/k8s_cluster_user_data.py',
                           'Files/kubernetes/nfs-pv1.yaml', 'a.sh']),
    (checks.directory, ['/volume', '/volume/nfs/pv1', '/mnt/a_b-c.d']),
    (checks.cidr, ['192.168.3.0/16', '10.96.0.0/12', 'fd00::/64',
                   '10.0.0.1/32']),
    (checks.network, ['10.10.0.0/24', '10.10.0.5', 'fd00::1']),
    (checks.proxy_url, ['http://user1:password1@host1:port1',
                        'https://user2:password2@host2:port2',
                        'http://proxy:3128', 'http://[fd00::1]:3128',
                        'socks5h://10.0.0.1:1080/', 'http://host1']),
    (checks.no_proxy, ['192.168.246.0/24,10.0.0.1', 'localhost',
                       '.example.com,*.svc,host:8080,*', '::1,[fd00::2]']),
]

BAD = [
    (checks.resource_name, ['a b', 'a/b', 'a\nb', 'x' * 256, 'é']),
    (checks.user_name, ['1abc', 'a b', 'a;b', 'u' * 33, 'ü', 'a.b']),
    (checks.password, ['a\nb', 'a\tb', 'a\x00b', 'a\u2028b']),
    (checks.vim_name, ['a\nb', '   ']),
    (checks.python_class, ['1X', 'a-b', 'a.b', 'a b']),
    (checks.package_path, ['/abs', '../x', 'a/../b', 'a\\b', 'a\x00',
                           'a//b', 'a/', 'a/./b', '.', 'a b', '$(x)',
                           'a;b', '~/x', 'a|b', 'a`b`']),
    (checks.directory, ['relative', '/', '//', '/a/../b', '/a//b', '/a/',
                        '/a/.', '//a', '/a b', '/a;b', '/a\nb', '/$x']),
    (checks.cidr, ['abc', '10.0.0.1', '10.0.0.0/33', '10.0.0.0/255.0.0.0',
                   ' 10.0.0.0/8', '10.0.0.0/8 ', '300.0.0.0/8', '::/129',
                   '10.0.0.0/-1', '10.0.0.0/']),
    (checks.network, ['10.0.0.0/33', 'host', '10.0.0', '*']),
    (checks.proxy_url, ['host:80', 'http://', 'http://:80', 'ftp://h',
                        'http://h:8 0', 'http://h\n', 'http://a:b:c',
                        'http://h:', 'http://[fd00::1', 'http//h',
                        'http://h"x', 'http://h:80\\']),
    (checks.no_proxy, ['a, b', 'a;b', ',a', 'a,', 'a,,b', 'a b',
                       '10.0.0.300', '$(x)', 'a\nb']),
]


@pytest.mark.parametrize('check, value', [
    (check, value) for check, values in GOOD for value in values])
def test_accepted(check, value):
    assert check(value) is None


@pytest.mark.parametrize('check, value', [
    (check, value) for check, values in BAD for value in values])
def test_rejected_with_a_message(check, value):
    message = check(value)
    assert isinstance(message, str) and message
    assert '\n' not in message


def test_shell_message_names_the_character():
    assert "'$'" in checks.resource_name('a$b')


@pytest.mark.parametrize('parts, expected', [
    (('a', 'b'), 'base.a.b'),
    (('a', 0, 'b'), 'base.a[0].b'),
    (('lcm-operation-user-data',), 'base.lcm-operation-user-data'),
    (('a.b',), 'base["a.b"]'),
])
def test_render(parts, expected):
    assert render('base', parts) == expected


def test_render_without_base():
    assert render('', ('flavourId',)) == 'flavourId'
    assert render('', ()) == '(request body)'


def test_show_escapes_and_truncates():
    assert show('a\nb') == "'a\\nb'"
    assert len(show('x' * 500)) < 100
