"""A tenant's uploaded files: the row (name, purpose, size) here, the bytes in the files
storage (storage.py) under `storage_name`."""
from django.db import models

from responses_app.models import Tenant

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")


class StoredFile(models.Model):
    """One file of the Files API (`file-…`)."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="files")
    filename = models.CharField(max_length=512)
    purpose = models.CharField(max_length=32)
    bytes = models.BigIntegerField()
    storage_name = models.CharField(max_length=600)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "files"
        indexes = [models.Index(fields=["tenant", "created_at"], name="files_tenant_created")]

    def __str__(self):
        return f"{self.id} ({self.filename})"
