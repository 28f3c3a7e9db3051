"""`manage.py set_limits TENANT [--requests-per-minute N …]`: override a tenant's limits.

An option left out keeps its current override; `default` removes it (deployment default
again); 0 is unlimited.
"""
from django.core.management.base import BaseCommand, CommandError

from accounting.models import TenantLimits
from responses_app.models import Tenant

FIELDS = ["requests_per_minute", "tokens_per_minute", "concurrent_runs",
          "key_requests_per_minute", "key_tokens_per_minute", "key_concurrent_runs",
          "monthly_token_budget"]


def _value(text: str):
    if text == "default":
        return text
    if not text.isdigit():
        raise CommandError(f"{text!r} is neither a non-negative integer nor 'default'")
    return int(text)


class Command(BaseCommand):
    help = "Override the limits of one tenant (0: unlimited, 'default': deployment default)."

    def add_arguments(self, parser):
        parser.add_argument("tenant")
        for name in FIELDS:
            parser.add_argument("--" + name.replace("_", "-"), type=_value)

    def handle(self, *args, tenant, **options):
        try:
            tenant = Tenant.objects.get(name=tenant)
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant named {tenant!r}") from None
        limits, _ = TenantLimits.objects.get_or_create(tenant=tenant)
        for name in FIELDS:
            if options[name] is not None:  # given on the command line
                setattr(limits, name, None if options[name] == "default" else options[name])
        limits.save()
        values = ", ".join(f"{name}={getattr(limits, name)}" for name in FIELDS)
        self.stdout.write(f"Limits of {tenant.name!r}: {values}")
