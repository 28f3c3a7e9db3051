"""`manage.py create_tenant NAME`: create the tenant if needed and print a new API key."""
from django.core.management.base import BaseCommand

from responses_app.auth import mint_api_key
from responses_app.models import Tenant


class Command(BaseCommand):
    help = "Create a tenant (if it does not exist) and print a new API key as the last line."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--key-name", default="", help="a label for the new key")

    def handle(self, *args, name, key_name, **options):
        tenant, created = Tenant.objects.get_or_create(name=name)
        self.stdout.write(f"{'Created' if created else 'Found'} tenant {tenant.name!r} "
                          f"(id {tenant.id}). New API key (shown once):")
        self.stdout.write(mint_api_key(tenant, key_name))
