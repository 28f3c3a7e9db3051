"""Using a stored prompt in a create: the tenant's template version it names, filled with
its variables, put before the request (the version's instructions before the request's
own, its messages before the request's input), and what `response.prompt` echoes.

Another tenant's prompt is not found, as an unknown one is (400, `prompt.id`); an unknown
version is a 400 naming `prompt.version`; variable mistakes a 400 naming
`prompt.variables` (prompts.rendering)."""
from responses_app.errors import InvalidRequest
from responses_app.create.input_items import normalize_input

from .models import PromptTemplate, PromptVersion
from .rendering import PromptError, render


def prompt_version(tenant, reference: dict) -> PromptVersion:
    template = PromptTemplate.objects.filter(id=reference["id"], tenant=tenant).first()
    if template is None:
        raise InvalidRequest(f"Prompt with id '{reference['id']}' not found.",
                             param="prompt.id", code="not_found")
    versions = template.versions.order_by("-number")
    version = (versions.filter(number=int(reference["version"])) if reference["version"]
               else versions).first()
    if version is None:
        raise InvalidRequest(f"Version {reference['version'] or '(latest)'} of prompt "
                             f"'{template.id}' not found.", param="prompt.version",
                             code="not_found")
    return version


def apply_prompt(tenant, create) -> None:
    """Fill the create's prompt into its instructions, input and echoed `prompt`."""
    reference = create.params["prompt"]
    version = prompt_version(tenant, reference)
    where = f"version {version.number} of prompt '{version.template_id}'"
    try:
        instructions, messages = render(version.instructions, version.messages,
                                        reference["variables"], where)
    except PromptError as exc:
        raise InvalidRequest(str(exc), param=exc.param, code="invalid_value") from None
    if instructions:
        create.instructions = (f"{instructions}\n\n{create.instructions}"
                               if create.instructions else instructions)
    create.input_items = normalize_input(messages, "prompt") + create.input_items
    create.params["prompt"] = {**reference, "version": str(version.number)}
