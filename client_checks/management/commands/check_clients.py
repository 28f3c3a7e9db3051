"""`manage.py check_clients`: drive the installed openai SDK against a deployment and print
a pass/fail table; the exit status is 1 when any check failed."""
from django.core.management.base import BaseCommand, CommandError

from client_checks.runner import render, run_checks


class Command(BaseCommand):
    help = ("Drive the installed openai SDK against a deployment (streaming, a chain, an item "
            "reference, a function tool, background, cancel, stream resume, conversations) "
            "and print a pass/fail table.")
    requires_system_checks = []  # it talks to a deployment over HTTP, not to this database

    def add_arguments(self, parser):
        parser.add_argument("--base-url", required=True,
                            help="the deployment's /v1 URL, e.g. http://127.0.0.1:8000/v1")
        parser.add_argument("--api-key", required=True, help="an API key of the deployment")
        parser.add_argument("--model", default="llama3.1", help="a model that answers")
        parser.add_argument("--timeout", type=float, default=60.0,
                            help="seconds to wait for one HTTP request")

    def handle(self, *args, base_url, api_key, model, timeout, **options):
        results = run_checks(base_url, api_key, model, timeout)
        self.stdout.write(render(results))
        failed = sum(not result.passed for result in results)
        if failed:
            raise CommandError(f"{failed} of {len(results)} client checks failed")
