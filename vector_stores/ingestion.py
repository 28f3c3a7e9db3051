"""Ingesting one file of a store: claim it, read its bytes, extract its text, chunk it,
embed the chunks, and store them with the file's `completed` status in one transaction.

The claim is a conditional update (status in_progress and no live claim), so a redelivered
or duplicated task never ingests twice; a claim older than INGESTION_CLAIM_SECONDS (its
worker died) may be taken over. A file that cannot be read, or whose embedding fails,
ends `failed` with OpenAI's `last_error` and stores nothing; the other files of the store
are not touched. A file cancelled or detached while it was being embedded keeps no chunk.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.db import connection, transaction
from django.db.models import F, Q, Value
from django.utils import timezone

from files.storage import read_bytes

from .chunking import chunk_text
from .embedding import EmbeddingFailed, embed_texts
from .extraction import Unreadable, extract_text
from .models import Chunk, VectorStore, VectorStoreFile
from .sign_bits import sign_bits

log = logging.getLogger(__name__)
STORE_KEY_SHARE_SQL = f"SELECT 1 FROM {VectorStore._meta.db_table} WHERE id = %s FOR KEY SHARE"


def claim(store_file_id: int) -> bool:
    """Take the file for ingestion; False when it is not in progress or another task holds it."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.INGESTION_CLAIM_SECONDS)
    return VectorStoreFile.objects.filter(
        Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale),
        pk=store_file_id, status="in_progress",
    ).update(claimed_at=now, attempts=F("attempts") + 1) == 1


def stalled_files() -> list[int]:
    """Files in progress whose claim lapsed, or that no task claimed within the claim time
    (a message lost with its worker): `celery beat` sends their tasks again."""
    stale = timezone.now() - timedelta(seconds=settings.INGESTION_CLAIM_SECONDS)
    return list(VectorStoreFile.objects.filter(
        Q(claimed_at__lt=stale) | Q(claimed_at__isnull=True, created_at__lt=stale),
        status="in_progress").values_list("pk", flat=True)[:1000])


def release(store_file_id: int) -> None:
    """Give the claim back (the task will be retried)."""
    VectorStoreFile.objects.filter(pk=store_file_id, status="in_progress").update(claimed_at=None)


def ingest(store_file_id: int) -> str:
    """Ingest a claimed-or-claimable file; its final status, or 'skipped' when not claimed.
    Raises on infrastructure errors (database, storage) after giving its claim back."""
    if not claim(store_file_id):
        return "skipped"
    try:
        row = VectorStoreFile.objects.select_related("file").get(pk=store_file_id)
        data = read_bytes(row.file.storage_name)
        try:
            text = extract_text(data, row.file.filename)
            pieces = chunk_text(text, row.chunking_strategy)
            vectors = embed_texts([piece.text for piece in pieces])
        except Unreadable as exc:
            return fail(store_file_id, exc.code, exc.message)
        except EmbeddingFailed as exc:
            return fail(store_file_id, "server_error", str(exc))
        return _store(row, pieces, vectors)
    except BaseException:
        release(store_file_id)
        raise


def fail(store_file_id: int, code: str, message: str) -> str:
    log.warning("vector store file %s failed: %s", store_file_id, message)
    VectorStoreFile.objects.filter(pk=store_file_id, status="in_progress").update(
        status="failed", last_error={"code": code, "message": message}, claimed_at=None)
    return "failed"


def _store(row: VectorStoreFile, pieces, vectors) -> str:
    with transaction.atomic():
        # the store first (FOR KEY SHARE: what its chunks' foreign key takes at commit
        # anyway), as its delete locks it before its files: a delete that came first is
        # waited for (the file is then gone), one that comes later waits for the chunks
        with connection.cursor() as cursor:
            cursor.execute(STORE_KEY_SHARE_SQL, [row.store_id])
            if cursor.fetchone() is None:
                return "gone"
        locked = VectorStoreFile.objects.select_for_update().filter(
            pk=row.pk, status="in_progress").first()
        if locked is None:  # cancelled or detached meanwhile
            return "gone"
        Chunk.objects.filter(store_file=locked).delete()
        # the full-text vector in the INSERT: an UPDATE after it would write each row
        # again, and index its embedding in the HNSW graph a second time
        Chunk.objects.bulk_create(
            [Chunk(store_id=row.store_id, store_file=locked, position=position,
                   text=piece.text, tokens=piece.tokens, embedding=vector,
                   tsv=SearchVector(Value(piece.text), config="english"),
                   signs=sign_bits(vector))
             for position, (piece, vector) in enumerate(zip(pieces, vectors))],
            batch_size=500)
        locked.status = "completed"
        locked.usage_bytes = sum(len(piece.text.encode()) for piece in pieces)
        locked.chunk_count = len(pieces)
        locked.claimed_at = None
        locked.save(update_fields=["status", "usage_bytes", "chunk_count", "claimed_at"])
    return "completed"
