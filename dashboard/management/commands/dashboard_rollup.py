"""`manage.py dashboard_rollup`: write the missing rollups of the dashboard's windows now
(what the hourly beat task does), e.g. after an upgrade, before the first page view."""
from django.core.management.base import BaseCommand

from dashboard.tasks import roll_up_recent_buckets


class Command(BaseCommand):
    help = "Roll up the closed hours of the last 24 and the closed days of the last 30."

    def handle(self, *args, **options):
        self.stdout.write(f"{roll_up_recent_buckets()} buckets rolled up")
