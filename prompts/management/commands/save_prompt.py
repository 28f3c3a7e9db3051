"""`manage.py save_prompt TENANT NAME [--instructions TEXT | --instructions-file PATH]
[--messages-file PATH]`: a new version of the tenant's prompt template NAME (the template
is created with version 1 if the tenant has none of that name). Prints the template id
and the version number, which a create body names as `prompt: {id, version}`."""
import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from prompts.models import PromptTemplate
from responses_app.models import Tenant


class Command(BaseCommand):
    help = "Add a version to a tenant's prompt template (created if new)."

    def add_arguments(self, parser):
        parser.add_argument("tenant")
        parser.add_argument("name")
        text = parser.add_mutually_exclusive_group()
        text.add_argument("--instructions", default="")
        text.add_argument("--instructions-file")
        parser.add_argument("--messages-file", help="A JSON list of input messages.")

    def handle(self, *args, tenant, name, instructions, instructions_file, messages_file,
               **options):
        owner = Tenant.objects.filter(name=tenant).first()
        if owner is None:
            raise CommandError(f"No tenant named {tenant!r}.")
        if instructions_file:
            instructions = Path(instructions_file).read_text()
        try:
            messages = json.loads(Path(messages_file).read_text()) if messages_file else []
        except ValueError as exc:
            raise CommandError(f"{messages_file}: not JSON ({exc}).") from None
        template = PromptTemplate.objects.filter(tenant=owner, name=name).first()
        if template is None:
            template = PromptTemplate.objects.create(tenant=owner, name=name)
        try:
            version = template.add_version(instructions, messages)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"{template.id} {version.number}")
