"""The JSON parser of the DRF views: DRF's own, refusing strings that hold a NUL character
(Postgres text cannot store one; the ASGI front applies the same rule to POST /v1/responses)."""
from rest_framework.parsers import JSONParser

from ..create.nul import NUL_MESSAGE, contains_nul
from ..errors import InvalidRequest


class JSONWithoutNulParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if contains_nul(data):
            raise InvalidRequest(NUL_MESSAGE, code="invalid_value")
        return data
