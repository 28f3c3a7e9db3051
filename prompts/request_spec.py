"""The `prompt` parameter of a create body, checked without the database:
`{"id": "pmpt_…", "version": "2" | null, "variables": {name: string | input_text |
input_image | input_file}}`. Which template it names, and filling it, is prompts.services'.
"""
from responses_app.errors import InvalidRequest
from responses_app.create.tool_output_parts import tool_output

SCHEMA = {"type": "object", "required": ["id"], "additionalProperties": False,
          "description": "A stored prompt template (per tenant, versioned) and its variables.",
          "properties": {"id": {"type": "string", "minLength": 1},
                         "version": {"type": ["string", "null"], "pattern": "^[0-9]+$"},
                         "variables": {"type": ["object", "null"], "additionalProperties": {
                             "oneOf": [{"type": "string"}, {"type": "object"}]}}}}


def parse_prompt(value, param: str) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not value["id"]:
        raise InvalidRequest(f"'{param}' must be an object with the 'id' of a stored prompt.",
                             param=f"{param}.id", code="invalid_value")
    unknown = set(value) - {"id", "version", "variables"}
    if unknown:
        raise InvalidRequest(f"Unknown parameter: '{param}.{sorted(unknown)[0]}'.",
                             param=f"{param}.{sorted(unknown)[0]}", code="unknown_parameter")
    version = value.get("version")
    # ASCII digits, as the schema's pattern: str.isdigit() is also true of "²", which int()
    # refuses, and of other scripts' digits
    if version is not None and not (isinstance(version, str) and version.isascii()
                                    and version.isdigit()):
        raise InvalidRequest(f"Invalid value for '{param}.version': a version number as a "
                             f"string, e.g. \"2\".", param=f"{param}.version",
                             code="invalid_value")
    variables = value.get("variables") or {}
    if not isinstance(variables, dict):
        raise InvalidRequest(f"'{param}.variables' must be an object.",
                             param=f"{param}.variables", code="invalid_type")
    return {"id": value["id"], "version": version,
            "variables": {name: _variable(v, f"{param}.variables.{name}")
                          for name, v in variables.items()}}


def _variable(value, param):
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return tool_output([value], param)[0]
    raise InvalidRequest(f"'{param}' must be a string or an input_text, input_image or "
                         f"input_file part.", param=param, code="invalid_type")
