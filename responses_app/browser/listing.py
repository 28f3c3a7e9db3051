"""The response list: filters from the query string, newest first, paged by a cursor.

Paging by a (created_at, id) cursor instead of page numbers: no COUNT over every stored
response, and each page is an index range scan whatever the table's size. Searching by id
is a primary-key lookup; searching text scans the JSON of the rows the other filters keep
(newest first, stopping at a page), so narrow it by tenant or date on a large table.
"""
import re
from datetime import datetime, time, timedelta

from django import forms
from django.db.models import Q
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Left
from django.utils import timezone

from ..models import ResponseStatus, StoredResponse, Tenant

PAGE_SIZE = 50
LIST_FIELDS = ("id", "tenant__name", "status", "model", "background", "previous_response_id",
               "created_at", "completed_at", "error_code", "input_tokens", "output_tokens")
ID_PATTERN = re.compile(r"resp_[A-Za-z0-9]+")
YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]
PREVIEW_CHARS = 160


class DateInput(forms.DateInput):
    input_type = "date"


class ResponseFilterForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"), required=False,
                                    empty_label="all tenants")
    status = forms.ChoiceField(choices=[("", "any status"), *ResponseStatus.choices],
                               required=False)
    model = forms.CharField(required=False, max_length=200)
    created_from = forms.DateField(required=False, widget=DateInput, label="from")
    created_to = forms.DateField(required=False, widget=DateInput, label="to")
    has_error = forms.ChoiceField(choices=YES_NO, required=False, label="error")
    error_code = forms.CharField(required=False, max_length=64, label="error code")
    background = forms.ChoiceField(choices=YES_NO, required=False)
    q = forms.CharField(required=False, max_length=500, label="search")
    before = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_before(self) -> tuple[datetime, str] | None:
        """The cursor `<created_at ISO>~<id>`: the page starts after this response."""
        raw = self.cleaned_data.get("before")
        if not raw:
            return None
        stamp, _, response_id = raw.partition("~")
        try:
            return datetime.fromisoformat(stamp), response_id
        except ValueError:
            raise forms.ValidationError("Not a page cursor.") from None


def _day_start(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_default_timezone())


def filtered_responses(filters: dict):
    """The responses matching cleaned filter values, newest first (no page applied)."""
    rows = StoredResponse.objects.all()
    if filters.get("tenant"):
        rows = rows.filter(tenant=filters["tenant"])
    if filters.get("status"):
        rows = rows.filter(status=filters["status"])
    if filters.get("model"):
        rows = rows.filter(model=filters["model"].strip())
    if filters.get("created_from"):
        rows = rows.filter(created_at__gte=_day_start(filters["created_from"]))
    if filters.get("created_to"):
        rows = rows.filter(created_at__lt=_day_start(filters["created_to"] + timedelta(days=1)))
    if filters.get("has_error"):
        rows = rows.filter(error_code__isnull=filters["has_error"] == "no")
    if filters.get("error_code"):
        rows = rows.filter(error_code=filters["error_code"].strip())
    if filters.get("background"):
        rows = rows.filter(background=filters["background"] == "yes")
    query = (filters.get("q") or "").strip()
    if ID_PATTERN.fullmatch(query):
        rows = rows.filter(id=query)
    elif query:
        rows = rows.filter(Q(input_items__icontains=query) | Q(resource__output__icontains=query))
    return rows.order_by("-created_at", "-id")


def page_query(filters: dict):
    """The query of one page (and one row more, to know whether another page follows)."""
    rows = filtered_responses(filters)
    if filters.get("before"):
        stamp, response_id = filters["before"]
        rows = rows.filter(Q(created_at__lt=stamp) | Q(created_at=stamp, id__lt=response_id))
    return (rows.select_related("tenant").only(*LIST_FIELDS)
            .annotate(input_preview=Left(Coalesce(KT("input_items__0__content__0__text"),
                                                  KT("input_items__0__output")), PREVIEW_CHARS))
            [:PAGE_SIZE + 1])


def response_page(filters: dict) -> tuple[list[StoredResponse], str | None]:
    """One page of matching responses and the cursor of the next page (None at the end)."""
    page = list(page_query(filters))
    if len(page) <= PAGE_SIZE:
        return page, None
    page = page[:PAGE_SIZE]
    last = page[-1]
    return page, f"{last.created_at.isoformat()}~{last.id}"
