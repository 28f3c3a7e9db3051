"""Prompt templates, stored per tenant and versioned (`prompt: {id, version, variables}` in
a create body, as OpenAI's reusable prompts).

A `PromptTemplate` (id `pmpt_…`) belongs to one tenant and has numbered `PromptVersion`s
(1, 2, …). A version is written once: saving it again is refused, so a new version never
changes an old one and a client pinned to `version: "2"` always gets the same text. A
version holds `instructions` and `messages` (input messages, in a create body's shape),
both of which may name variables as `{{name}}` (templating: prompts.rendering).
"""
from django.core.exceptions import ValidationError
from django.db import models, transaction

from responses_app.ids import new_id
from responses_app.models import Tenant

from .rendering import check_template


def new_prompt_id() -> str:
    return new_id("pmpt")


class PromptTemplate(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_prompt_id,
                          editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="prompts")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "prompt_templates"
        ordering = ["tenant", "name"]

    def __str__(self):
        return f"{self.name} ({self.id})"

    def add_version(self, instructions: str = "", messages: list | None = None) -> "PromptVersion":
        """A new version, numbered after the last one (the template row locked meanwhile)."""
        with transaction.atomic():
            PromptTemplate.objects.select_for_update().get(pk=self.pk)
            last = self.versions.order_by("-number").values_list("number", flat=True).first()
            version = PromptVersion(template=self, number=(last or 0) + 1,
                                    instructions=instructions, messages=messages or [])
            version.full_clean()
            version.save()
            return version


class PromptVersion(models.Model):
    template = models.ForeignKey(PromptTemplate, on_delete=models.CASCADE,
                                 related_name="versions")
    number = models.PositiveIntegerField(editable=False)
    instructions = models.TextField(
        blank=True, default="", help_text="Sent as the response's instructions; may name "
                                          "variables as {{name}}.")
    messages = models.JSONField(
        default=list, blank=True,
        help_text='Input messages put before the request\'s input, e.g. [{"role": "user", '
                  '"content": "Summarize {{topic}}"}]; a text part that is only {{name}} '
                  "may be filled by an image or file variable.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "prompt_versions"
        ordering = ["template", "number"]
        constraints = [models.UniqueConstraint(fields=["template", "number"],
                                               name="prompt_version_unique")]

    def __str__(self):
        return f"{self.template_id} version {self.number}"

    def clean(self):
        try:
            check_template(self.instructions, self.messages)
        except ValueError as exc:
            raise ValidationError({"messages": str(exc)}) from None

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValidationError("A prompt version is never changed: add a new version.")
        super().save(*args, **kwargs)
