"""GET /v1/openapi.json: the OpenAPI document, public, as application/json."""
from drf_spectacular.renderers import OpenApiJsonRenderer2
from drf_spectacular.views import SpectacularAPIView
from rest_framework.permissions import AllowAny


class OpenApiDocument(SpectacularAPIView):
    renderer_classes = [OpenApiJsonRenderer2]
    authentication_classes = []
    permission_classes = [AllowAny]
