"""Retention: stored responses older than RESPONSE_RETENTION_DAYS are deleted, with their
event streams, by a periodic task (`celery beat`). Each run deletes a bounded number of
batches; what is left goes on the next run."""
from datetime import datetime, timedelta, timezone

from django.conf import settings

from .bus import event_bus
from .models import StoredResponse

PRUNE_BATCH_SIZE = 500
PRUNE_MAX_BATCHES = 20


def responses_prune(now: datetime | None = None) -> int:
    """Delete responses created before the retention window; returns how many went."""
    days = settings.RESPONSE_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    pruned = 0
    for _ in range(PRUNE_MAX_BATCHES):
        ids = list(StoredResponse.objects.filter(created_at__lt=cutoff)
                   .values_list("id", flat=True)[:PRUNE_BATCH_SIZE])
        if not ids:
            break
        StoredResponse.objects.filter(id__in=ids).delete()
        event_bus().delete(*ids)
        pruned += len(ids)
    return pruned
