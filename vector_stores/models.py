"""Database rows of the Vector Stores API: a tenant's stores, the files attached to them
(with their ingestion state), file batches, and the chunks ingestion writes.

A chunk keeps its text, its embedding (pgvector, HNSW index with cosine distance) and its
full-text vector (tsvector, GIN index), and its embedding's sign bits (sign_bits.py: a
filter's chunks pre-ranked on them by an index-only scan); its rows are written in the
transaction that marks its file `completed`, so search never sees a file half ingested.
The embedding's dimension is EMBEDDING_DIMENSIONS as it was when the table was migrated
(migration 0001).
"""
from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import HnswIndex, VectorField

from files.models import StoredFile
from responses_app.models import Tenant

from .sign_bits import SignBitsField

FILE_STATUSES = ("in_progress", "completed", "cancelled", "failed")


class VectorStore(models.Model):
    """A vector store (`vs_…`); its status, file counts and usage are read from its files."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="vector_stores")
    name = models.CharField(max_length=512, blank=True, default="")
    description = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()
    last_active_at = models.DateTimeField()
    expires_after_days = models.PositiveIntegerField(null=True, blank=True)
    chunking_strategy = models.JSONField(default=dict, blank=True)  # for files added at creation

    class Meta:
        db_table = "vector_stores"
        indexes = [models.Index(fields=["tenant", "created_at"], name="vector_stores_tenant")]

    def __str__(self):
        return f"{self.id} ({self.name})" if self.name else self.id


class FileBatch(models.Model):
    """A file batch (`vsfb_…`): its files are VectorStoreFile rows pointing at it."""

    id = models.CharField(max_length=64, primary_key=True)
    store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="batches")
    created_at = models.DateTimeField()
    cancelled = models.BooleanField(default=False)

    class Meta:
        db_table = "vector_store_file_batches"

    def __str__(self):
        return self.id


class PlaceQuerySet(models.QuerySet):
    def lock_in_order(self) -> None:
        """Lock these places (FOR UPDATE) in pk order, the one order in which every delete
        (a store's, a file's) takes places, before any of their chunks: an ingestion or a
        detach locking one of them then never waits for a delete holding a chunk of it."""
        list(self.order_by("pk").select_for_update().values_list("pk", flat=True))


class VectorStoreFile(models.Model):
    """A file attached to a store, and its ingestion: in_progress → completed | failed
    (with last_error) | cancelled. `claimed_at` is set by the ingestion task that works on
    it (a claim older than INGESTION_CLAIM_SECONDS may be taken over)."""

    store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="files")
    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="stores")
    batch = models.ForeignKey(FileBatch, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="files")
    status = models.CharField(max_length=16, default="in_progress",
                              choices=[(s, s) for s in FILE_STATUSES])
    last_error = models.JSONField(null=True, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    chunking_strategy = models.JSONField(default=dict)
    usage_bytes = models.BigIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    objects = PlaceQuerySet.as_manager()

    class Meta:
        db_table = "vector_store_files"
        constraints = [models.UniqueConstraint(fields=["store", "file"],
                                               name="vector_store_files_unique")]
        indexes = [models.Index(fields=["store", "status"], name="vector_store_files_status")]

    def __str__(self):
        return f"{self.file_id} in {self.store_id}"


class Chunk(models.Model):
    """One chunk of an ingested file: text, embedding, full-text vector."""

    # no index of its own: vector_store_chunks_file leads with it (migration 0004)
    store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="chunks",
                              db_index=False)
    # its own index kept: the filtered text ranking's bitmap reads it in half the pages of
    # vector_store_chunks_signs' (deduplicated; bench/README.md, "Duplicate indexes")
    store_file = models.ForeignKey(VectorStoreFile, on_delete=models.CASCADE,
                                   related_name="chunks")
    position = models.PositiveIntegerField()  # its order in the file
    text = models.TextField()
    tokens = models.PositiveIntegerField()
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    tsv = SearchVectorField(null=True)
    signs = SignBitsField(null=True)  # sign_bits.sign_bits(embedding); NULL: not yet backfilled

    class Meta:
        db_table = "vector_store_chunks"
        indexes = [
            models.Index(fields=["store", "store_file"], name="vector_store_chunks_file"),
            HnswIndex(name="vector_store_chunks_hnsw", fields=["embedding"], m=16,
                      ef_construction=64, opclasses=["vector_cosine_ops"]),
            GinIndex(fields=["tsv"], name="vector_store_chunks_tsv"),
            models.Index(fields=["store_file"], include=["id", "signs"],
                         name="vector_store_chunks_signs"),
            models.Index(fields=["store_file", "id"], condition=models.Q(signs__isnull=True),
                         name="vector_store_chunks_unsigned"),  # sign_backfill.py
        ]

    def __str__(self):
        return f"chunk {self.position} of {self.store_file_id}"
