import logging

from kubernetes_mgmt import redact


def test_registered_secret_is_masked_everywhere_in_text():
    redact.register('s3cr3t-pass')
    out = redact.redact('login ubuntu/s3cr3t-pass then s3cr3t-pass again')
    assert 's3cr3t-pass' not in out
    assert out.count(redact.MASK) == 2


def test_url_credentials_and_bearer_tokens_masked_without_registration():
    out = redact.redact('proxy http://user1:pw-never-told@proxy:3128 '
                        'Authorization: Bearer eyJhbGciOi.abc.def')
    assert 'pw-never-told' not in out
    assert 'eyJhbGciOi' not in out
    assert 'http://user1:***@proxy:3128' in out


def test_short_values_are_not_treated_as_secrets():
    redact.register('ab')
    assert redact.redact('abc') == 'abc'


def test_logger_masks_arguments_and_exceptions(caplog):
    redact.register('hunter2-token')
    log = redact.get_logger('kubernetes_mgmt.test_redact')
    with caplog.at_level(logging.DEBUG, logger='kubernetes_mgmt'):
        log.info('token is %s', 'hunter2-token')
        try:
            raise RuntimeError('failed with hunter2-token')
        except RuntimeError:
            log.exception('boom')
    text = caplog.text
    assert 'hunter2-token' not in text
    assert 'token is ***' in text
