"""When the upstream client retries: only "try later" failures, within the caps."""
from datetime import datetime, timezone

import pytest

from upstreams.retry_policy import RetryPolicy, delay_before_retry, parse_retry_after

POLICY = RetryPolicy(max_retries=3, max_wait=5.0, base_delay=0.25)
NOW = datetime(2026, 11, 22, 7, 0, 0, tzinfo=timezone.utc)


def test_backoff_doubles_from_the_base_delay_and_is_capped():
    assert [delay_before_retry(POLICY, n, jitter=1.0) for n in range(3)] == [0.25, 0.5, 1.0]
    assert delay_before_retry(RetryPolicy(max_retries=9, max_wait=2.0), 8, jitter=1.0) == 2.0
    assert delay_before_retry(POLICY, 0, jitter=0.5) == 0.125


def test_it_gives_up_after_max_retries():
    assert delay_before_retry(POLICY, 3, jitter=1.0) is None
    assert delay_before_retry(RetryPolicy(), 0, jitter=1.0) is None


@pytest.mark.parametrize("status", [429, 502, 503, 504, None])
def test_try_later_statuses_and_connection_failures_are_retried(status):
    assert delay_before_retry(POLICY, 0, status=status, jitter=1.0) == 0.25


@pytest.mark.parametrize("status", [400, 401, 404, 500, 501])
def test_other_statuses_are_not_retried(status):
    assert delay_before_retry(POLICY, 0, status=status, jitter=1.0) is None


def test_retry_after_is_honoured_within_the_cap():
    assert delay_before_retry(POLICY, 0, status=429, retry_after="2") == 2.0
    assert delay_before_retry(POLICY, 0, status=503, retry_after="5") == 5.0
    assert delay_before_retry(POLICY, 0, status=429, retry_after="7") is None
    assert delay_before_retry(POLICY, 0, status=429, retry_after="soon", jitter=1.0) == 0.25


def test_retry_after_reads_seconds_and_http_dates():
    assert parse_retry_after(" 3 ") == 3.0
    assert parse_retry_after("-1") == 0.0
    assert parse_retry_after("Sun, 22 Nov 2026 07:00:04 GMT", NOW) == 4.0
    assert parse_retry_after("Sun, 22 Nov 2026 06:00:00 GMT", NOW) == 0.0
    assert parse_retry_after("nan") is None
    assert parse_retry_after("tomorrow") is None
