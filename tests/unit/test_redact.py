import contextvars
import json
import logging
import subprocess
import sys
import textwrap
import threading

from kubernetes_mgmt import redact
from kubernetes_mgmt.engine.runner import run_each
from kubernetes_mgmt.errors import CommandFailed
from kubernetes_mgmt.shim import v1_hooks as lifecycle

LOGGER = 'kubernetes_mgmt.test_redact'


def test_registered_secret_is_masked_everywhere_in_text():
    redact.register('s3cr3t-pass')
    out = redact.redact('login ubuntu/s3cr3t-pass then s3cr3t-pass again')
    assert 's3cr3t-pass' not in out
    assert out.count(redact.MASK) == 2


def test_url_credentials_and_bearer_tokens_masked_without_registration():
    def outside_any_operation():
        return redact.redact('proxy http://user1:pw-never-told@proxy:3128 '
                             'Authorization: Bearer eyJhbGciOi.abc.def')

    out = contextvars.Context().run(outside_any_operation)
    assert 'pw-never-told' not in out
    assert 'eyJhbGciOi' not in out
    assert 'http://user1:***@proxy:3128' in out


def test_short_values_are_not_treated_as_secrets():
    redact.register('ab')
    assert redact.redact('abc') == 'abc'


def test_logger_masks_arguments_and_exceptions(caplog):
    redact.register('hunter2-token')
    log = redact.get_logger(LOGGER)
    with caplog.at_level(logging.DEBUG, logger='kubernetes_mgmt'):
        log.info('token is %s', 'hunter2-token')
        try:
            raise RuntimeError('failed with hunter2-token')
        except RuntimeError:
            log.exception('boom')
    text = caplog.text
    assert 'hunter2-token' not in text
    assert 'token is ***' in text


def test_error_message_masked_but_command_output_kept_as_data():
    # A VM password that is an ordinary word: the data the driver parses
    # keeps it, the message a user reads does not.
    redact.register('worker')
    stdout = json.dumps({'items': [{'name': 'worker-abc'}]})
    error = CommandFailed('master-0', 'list nodes', 1, stdout, '')
    assert error.stdout == stdout
    assert json.loads(error.stdout)['items'][0]['name'] == 'worker-abc'
    assert 'worker-abc' not in str(error)
    assert '***-abc' in str(error)


def test_secret_of_one_operation_is_not_masked_in_a_concurrent_one():
    both_registered = threading.Barrier(2)
    seen = {}

    def operation(mine: str, theirs: str) -> None:
        with redact.operation(mine):
            redact.register(mine)
            both_registered.wait(timeout=10)
            seen[mine] = redact.redact(f'{mine} {theirs}')

    threads = [threading.Thread(target=operation, args=pair)
               for pair in (('alpha-token-1', 'bravo-token-2'),
                            ('bravo-token-2', 'alpha-token-1'))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {'alpha-token-1': '*** bravo-token-2',
                    'bravo-token-2': '*** alpha-token-1'}


def test_scope_reaches_the_operations_worker_threads(caplog):
    log = redact.get_logger(LOGGER)
    with redact.operation('instantiate'):
        redact.register('joined-with-secret')

        def step(host: str) -> str:
            log.info('[%s] token joined-with-secret', host)
            redact.register(f'{host}-own-secret')  # into the operation
            return redact.redact('joined-with-secret')

        with caplog.at_level(logging.INFO, logger='kubernetes_mgmt'):
            results = run_each('join', ['m1', 'm2', 'm3'], step,
                               label=str, parallel=3)
        assert results == ['***'] * 3
        assert redact.redact('m2-own-secret') == '***'
    assert 'joined-with-secret' not in caplog.text
    assert caplog.text.count('token ***') == 3


def test_nothing_is_remembered_after_the_operation():
    outer = redact.current()
    with redact.operation('heal') as scope:
        redact.register('gone-after-heal')
        assert redact.redact('gone-after-heal') == '***'
        assert len(scope) == 1
    assert redact.current() is outer
    assert redact.redact('gone-after-heal') == 'gone-after-heal'
    assert len(outer) == 0
    # Outside any operation there is nowhere to remember a secret.
    empty = contextvars.Context()
    empty.run(redact.register, 'never-kept')
    assert empty.run(redact.redact, 'never-kept') == 'never-kept'


def test_each_hook_is_its_own_operation(monkeypatch, caplog):
    scopes = []

    def terminate_start(context, vnf_instance):
        scopes.append(redact.current())
        redact.register('hook-secret-1')
        redact.get_logger(LOGGER).info('using hook-secret-1')

    monkeypatch.setattr(lifecycle.terminate, 'terminate_start',
                        terminate_start)
    hooks = lifecycle.Lifecycle()
    with caplog.at_level(logging.INFO, logger='kubernetes_mgmt'):
        for _ in range(2):
            hooks.terminate_start(None, None, None, None, None)
    assert 'hook-secret-1' not in caplog.text
    assert scopes[0] is not scopes[1]
    assert all(s.hook and s.parent is redact.current() for s in scopes)
    assert redact.redact('hook-secret-1') == 'hook-secret-1'


def test_cli_output_is_masked(capsys):
    redact.register('printed-secret')
    with redact.masked_output():
        print('the token: printed-secret')
        print('error: printed-secret', file=sys.stderr)
    out, err = capsys.readouterr()
    assert out == 'the token: ***\n'
    assert err == 'error: ***\n'


EVENTLET = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()
    import json, logging
    from kubernetes_mgmt import redact
    from kubernetes_mgmt.engine.runner import run_each

    gate = eventlet.event.Event()

    def operation(mine, theirs):
        with redact.operation(mine):
            redact.register(mine)
            gate.wait()
            shown = run_each('p', [1, 2], lambda _: redact.redact(
                mine + ' ' + theirs), label=str, parallel=2)
            return shown

    a = eventlet.spawn(operation, 'alpha-green-1', 'bravo-green-2')
    b = eventlet.spawn(operation, 'bravo-green-2', 'alpha-green-1')
    eventlet.sleep(0)
    gate.send()
    print(json.dumps([a.wait(), b.wait()]))
''')


def test_scopes_under_eventlet_monkey_patching():
    proc = subprocess.run([sys.executable, '-c', EVENTLET],
                          capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [
        ['*** bravo-green-2'] * 2, ['*** alpha-green-1'] * 2]
