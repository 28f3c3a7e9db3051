"""drf-spectacular extensions: bearer API keys, and the documentation of each view in
api_schema.operations applied from here (the views stay free of schema code)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiViewExtension
from drf_spectacular.utils import extend_schema, extend_schema_view

from .operations import DOCUMENTED_VIEWS


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "responses_app.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "`Authorization: Bearer sk-…` (a key from create_tenant)."}


def _documented_view_extension(view_path: str, methods: dict) -> type:
    def view_replacement(self):
        documented = {method: extend_schema(**arguments) for method, arguments in methods.items()}
        return extend_schema_view(**documented)(type(self.target.__name__, (self.target,), {}))

    # optional: a view that does not exist in this build is skipped without a warning
    return type(f"Document{view_path.rsplit('.', 1)[1]}", (OpenApiViewExtension,),
                {"target_class": view_path, "optional": True,
                 "view_replacement": view_replacement})


DOCUMENTED_VIEW_EXTENSIONS = [_documented_view_extension(path, methods)
                              for path, methods in DOCUMENTED_VIEWS.items()]
