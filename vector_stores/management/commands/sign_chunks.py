"""`manage.py sign_chunks`: sign now the chunks an upgrade left without sign bits (what the
periodic beat task, or the embedded mode's timer, does 45 s at a time)."""
from django.core.management.base import BaseCommand

from vector_stores.sign_backfill import BATCH, sign_unsigned


class Command(BaseCommand):
    help = "Write the sign bits of the vector store chunks stored without them, in batches."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=BATCH)

    def handle(self, *args, batch_size, **options):
        self.stdout.write(f"{sign_unsigned(batch_size, float('inf'))} chunks signed")
