"""The /v1/files endpoints (DRF). Thin: check the size, call a service or selector, render."""
from django.conf import settings
from django.http import FileResponse
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from responses_app.errors import InvalidRequest

from . import selectors, services
from .storage import file_storage

MULTIPART_ROOM = 64 * 1024  # what a multipart body adds to its file (boundaries, fields)


class FileList(APIView):
    parser_classes = [MultiPartParser]

    def get(self, request):
        return Response(selectors.files_page(request.user.tenant, request.query_params))

    def post(self, request):
        # refused before the body is read when its length alone says it is too large
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > settings.FILES_MAX_BYTES + MULTIPART_ROOM:
            raise services.too_large()
        if not request.content_type.startswith("multipart/form-data"):
            raise InvalidRequest("Upload a file as multipart/form-data with the fields 'file' "
                                 "and 'purpose'.", code="unsupported_media_type")
        return Response(services.file_create(request.user.tenant, request.FILES.get("file"),
                                             request.data))


class FileDetail(APIView):
    def get(self, request, file_id):
        return Response(selectors.file_get(request.user.tenant, file_id))

    def delete(self, request, file_id):
        return Response(services.file_delete(request.user.tenant, file_id))


class AnyAccept(BaseContentNegotiation):
    """The bytes are the answer whatever Accept says (the SDK sends application/binary);
    errors are still JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class FileContent(APIView):
    content_negotiation_class = AnyAccept

    def get(self, request, file_id):
        row = selectors.file_row(request.user.tenant, file_id)
        return FileResponse(file_storage().open(row.storage_name, "rb"),
                            content_type="application/octet-stream", as_attachment=True,
                            filename=row.filename)
