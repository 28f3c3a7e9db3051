"""Django admin for prompt templates: a template with its versions inline. A version, once
saved, is shown read-only; a new one is added (numbered after the last) by the blank row."""
from django.contrib import admin

from .models import PromptTemplate, PromptVersion


class PromptVersionInline(admin.StackedInline):
    model = PromptVersion
    fields = ("number", "instructions", "messages", "created_at")
    readonly_fields = ("number", "created_at")
    ordering = ("number",)
    extra = 1
    can_delete = False

    def has_change_permission(self, request, obj=None):
        return False  # a version is never changed: add a new one


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("id", "name")
    readonly_fields = ("id", "created_at")
    fields = ("id", "tenant", "name", "created_at")
    list_select_related = ("tenant",)
    inlines = (PromptVersionInline,)

    def save_formset(self, request, form, formset, change):
        for version in formset.save(commit=False):
            if version._state.adding:
                form.instance.add_version(version.instructions, version.messages)
