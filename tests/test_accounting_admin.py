"""Operators' side of limits and usage: `manage.py set_limits` and the admin pages."""
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from accounting import limits as limits_module
from accounting.limits import Limits, limits_for
from accounting.models import DailyUsage, TenantLimits
from accounting.usage import record_response_usage
from responses_app.models import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    limits_module._cache.clear()
    return Tenant.objects.create(name="alice")


@override_settings(DEFAULT_LIMITS={"requests_per_minute": 60, "monthly_token_budget": 1000})
def test_set_limits_overrides_defaults_and_default_restores_them(alice):
    call_command("set_limits", "alice", "--requests-per-minute", "5", "--concurrent-runs", "0",
                 "--tokens-per-minute", "900")
    assert limits_for(alice.id) == Limits(requests_per_minute=5, tokens_per_minute=900,
                                          monthly_token_budget=1000)
    limits_module._cache.clear()
    call_command("set_limits", "alice", "--requests-per-minute", "default")
    assert limits_for(alice.id) == Limits(requests_per_minute=60, tokens_per_minute=900,
                                          monthly_token_budget=1000)
    assert TenantLimits.objects.get(tenant=alice).concurrent_runs == 0


def test_set_limits_refuses_unknown_tenants_and_bad_values(alice):
    with pytest.raises(CommandError, match="no tenant named 'bob'"):
        call_command("set_limits", "bob", "--requests-per-minute", "5")
    with pytest.raises(CommandError):
        call_command("set_limits", "alice", "--requests-per-minute", "-1")


def test_the_daily_rollup_adds_up_concurrent_writers_rows(alice):
    for index, tokens in enumerate((10, 20, 30)):
        record_response_usage(response_id=f"resp_{index}", tenant_id=alice.id, api_key_id=None,
                              model="m", resource={"status": "completed", "usage": {
                                  "input_tokens": tokens, "output_tokens": 1,
                                  "input_tokens_details": {"cached_tokens": 2},
                                  "output_tokens_details": {"reasoning_tokens": 0}}})
    row = DailyUsage.objects.get(tenant=alice)
    assert (row.requests, row.input_tokens, row.cached_tokens, row.output_tokens) == (3, 60, 6, 3)


@pytest.mark.parametrize("model", ["tenantlimits", "responseusage", "dailyusage"])
def test_the_admin_lists_limits_and_usage(admin_client, alice, model):
    TenantLimits.objects.create(tenant=alice, requests_per_minute=5)
    response = admin_client.get(f"/admin/accounting/{model}/")
    assert response.status_code == 200
