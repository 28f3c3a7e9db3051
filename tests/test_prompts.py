"""Stored prompt templates (`prompt: {id, version, variables}`): filling variables of each
kind (pure), a version never changed (database), and end to end on the shared deployment
with the openai SDK: version pinning, the latest version, exact upstream messages, the
echoed `response.prompt`, an image variable, the 400s, and tenancy (bob cannot use
alice's prompt)."""
import json

import pytest

from prompts.rendering import PromptError, render, variables_of
from prompts.request_spec import parse_prompt
from responses_app.errors import InvalidRequest

IMAGE = {"type": "input_image", "image_url": "https://img.example/cat.png", "detail": "auto"}
MESSAGES = [{"role": "user", "content": "Topic: {{ topic }}"},
            {"role": "user", "content": [{"type": "input_text", "text": "{{picture}}"}]}]


def test_variables_of_each_kind_are_filled():
    instructions, messages = render("Speak {{lang}}.", MESSAGES, {
        "lang": {"type": "input_text", "text": "French"}, "topic": "cats",
        "picture": IMAGE}, "version 1 of prompt 'p'")
    assert instructions == "Speak French."
    assert messages == [{"role": "user", "content": "Topic: cats"},
                        {"role": "user", "content": [IMAGE]}]
    assert variables_of("Speak {{lang}}.", MESSAGES) == ["lang", "topic", "picture"]


def test_a_file_variable_goes_in_as_its_text():
    _, messages = render("", [{"role": "user", "content": "{{doc}}"}], {"doc": {
        "type": "input_file", "filename": "a.txt", "file_data": "aGVsbG8="}}, "v")
    assert messages == [{"role": "user", "content": [
        {"type": "input_text", "text": "[file: a.txt]\nhello"}]}]


@pytest.mark.parametrize("variables, message", [
    ({"topic": "cats"}, "Missing value for prompt variable 'picture' (version 1 of prompt 'p' "
                        "uses topic, picture)."),
    ({"topic": "cats", "picture": IMAGE, "mood": "calm"},
     "Unknown prompt variable 'mood': version 1 of prompt 'p' uses topic, picture."),
    ({"topic": IMAGE, "picture": IMAGE},
     "Prompt variable 'topic' is an input_image: it can only fill a message part that is "
     "'{{topic}}' alone."),
])
def test_variable_mistakes_are_named(variables, message):
    with pytest.raises(PromptError) as caught:
        render("", MESSAGES, variables, "version 1 of prompt 'p'")
    assert (str(caught.value), caught.value.param) == (message, "prompt.variables")


@pytest.mark.parametrize("version", ["\u00b2", "\u0663", "1.0", " 1", ""])
def test_a_version_is_ascii_digits(version):
    with pytest.raises(InvalidRequest) as refused:  # "²" was a 500 (int() refuses it)
        parse_prompt({"id": "pmpt_x", "version": version}, "prompt")
    assert (refused.value.status, refused.value.body) == (400, {"error": {
        "message": "Invalid value for 'prompt.version': a version number as a string, "
                   "e.g. \"2\".", "type": "invalid_request_error", "param": "prompt.version",
        "code": "invalid_value"}})
    assert parse_prompt({"id": "pmpt_x", "version": "12"}, "prompt")["version"] == "12"


@pytest.mark.django_db
def test_a_saved_version_is_never_changed():
    from django.core.exceptions import ValidationError

    from prompts.models import PromptTemplate
    from responses_app.models import Tenant

    template = PromptTemplate.objects.create(tenant=Tenant.objects.create(name="t-prompts"),
                                             name="greeter")
    first = template.add_version("Be kind.")
    second = template.add_version("Be brief.")
    first.instructions = "Be rude."
    with pytest.raises(ValidationError):
        first.save()
    assert [(v.number, v.instructions) for v in template.versions.order_by("number")] == [
        (1, "Be kind."), (2, "Be brief.")]
    assert second.number == 2


# --- end to end ------------------------------------------------------------------------------

def save_prompt(production, tmp_path, tenant, name, instructions, messages) -> tuple[str, str]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(messages))
    prompt_id, version = production.manage(
        "save_prompt", tenant, name, "--instructions", instructions,
        "--messages-file", str(path)).split()
    return prompt_id, version


def test_prompts_end_to_end(production, tenant_key, other_tenant_key, openai_client,
                            clean_upstream, tmp_path):
    from openai import BadRequestError, OpenAI

    name = "support-" + tmp_path.name[-8:]
    prompt_id, one = save_prompt(production, tmp_path, "alice", name,
                                 "You help with {{product}}.",
                                 [{"role": "user", "content": "My issue: {{issue}}"}])
    _, two = save_prompt(production, tmp_path, "alice", name, "You fix {{product}}.",
                         [{"role": "user", "content": "{{screenshot}}"}])
    assert (one, two) == ("1", "2")

    pinned = openai_client.responses.create(
        model="fake-echo", input="thanks", instructions="Be brief.",
        prompt={"id": prompt_id, "version": "1",
                "variables": {"product": "Widgets", "issue": "it hums"}})
    assert pinned.output_text == ("system: You help with Widgets.\n\nBe brief.\n"
                                  "user: My issue: it hums\nuser: thanks")
    assert pinned.prompt.model_dump(mode="json") == {
        "id": prompt_id, "version": "1", "variables": {"product": "Widgets",
                                                       "issue": "it hums"}}

    latest = openai_client.responses.create(
        model="fake-echo", input="see",
        prompt={"id": prompt_id, "variables": {"product": "Widgets", "screenshot": IMAGE}})
    assert latest.prompt.version == "2"
    assert clean_upstream.requests()[-1]["body"]["messages"] == [
        {"role": "system", "content": "You fix Widgets."},
        {"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": IMAGE["image_url"], "detail": "auto"}}]},
        {"role": "user", "content": "see"}]

    def refused(client, prompt) -> dict:
        with pytest.raises(BadRequestError) as raised:
            client.responses.create(model="fake-echo", input="hi", prompt=prompt)
        return raised.value.body

    assert refused(openai_client, {"id": prompt_id, "version": "9"}) == {
        "message": f"Version 9 of prompt '{prompt_id}' not found.",
        "type": "invalid_request_error", "param": "prompt.version", "code": "not_found"}
    assert refused(openai_client, {"id": prompt_id, "version": "1",
                                   "variables": {"product": "W"}}) == {
        "message": f"Missing value for prompt variable 'issue' (version 1 of prompt "
                   f"'{prompt_id}' uses product, issue).",
        "type": "invalid_request_error", "param": "prompt.variables", "code": "invalid_value"}
    bob = OpenAI(base_url=production.base_url, api_key=other_tenant_key, max_retries=0)
    assert refused(bob, {"id": prompt_id, "version": "1"}) == {
        "message": f"Prompt with id '{prompt_id}' not found.",
        "type": "invalid_request_error", "param": "prompt.id", "code": "not_found"}


def admin_post(client, url, tenant, template, instructions, versions=()):
    """The admin's add (no template) or change form of a template: the versions it has, shown
    read-only, and a new one in the blank row."""
    inline, total = "versions", len(versions) + 1
    data = {"tenant": tenant.id, "name": "faq",
            f"{inline}-TOTAL_FORMS": str(total), f"{inline}-INITIAL_FORMS": str(len(versions)),
            f"{inline}-MIN_NUM_FORMS": "0", f"{inline}-MAX_NUM_FORMS": "1000",
            f"{inline}-{total - 1}-instructions": instructions,
            f"{inline}-{total - 1}-messages": "[]",
            f"{inline}-{total - 1}-template": template.id if template else ""}
    for index, version in enumerate(versions):
        data |= {f"{inline}-{index}-id": str(version.id),
                 f"{inline}-{index}-template": template.id}
    return client.post(url, data)


def change_url(template) -> str:
    """The admin's URL of a template: its primary key quote()d, as the admin writes it.
    Unquoted, an id whose random part starts with 22-26 or 40 (`_22` reads as `"`) names
    no template, and the admin redirects home having saved nothing."""
    from django.contrib.admin.utils import quote

    return f"/admin/prompts/prompttemplate/{quote(template.id)}/change/"


@pytest.fixture
def admin_tenant(client):
    from django.contrib.auth.models import User

    from responses_app.models import Tenant

    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-1234567"))
    return Tenant.objects.create(name="t-admin-prompts")


@pytest.mark.django_db
def test_the_admin_adds_versions_and_never_changes_one(client, admin_tenant):
    from prompts.models import PromptTemplate

    response = admin_post(client, "/admin/prompts/prompttemplate/add/", admin_tenant, None,
                          "Answer from the FAQ.")
    assert response.status_code == 302
    template = PromptTemplate.objects.get(tenant=admin_tenant, name="faq")
    response = admin_post(client, change_url(template), admin_tenant, template,
                          "Answer from the FAQ, briefly.", [template.versions.get()])
    assert (response.status_code, response["Location"]) == (
        302, "/admin/prompts/prompttemplate/")
    assert [(v.number, v.instructions) for v in template.versions.order_by("number")] == [
        (1, "Answer from the FAQ."), (2, "Answer from the FAQ, briefly.")]


@pytest.mark.django_db
def test_the_admin_adds_a_version_to_a_template_whose_id_its_urls_escape(client, admin_tenant):
    """An id like the one the change test once failed with (6 random ids in 256): `pmpt_22…`."""
    from prompts.models import PromptTemplate

    template = PromptTemplate.objects.create(id=f"pmpt_22{'ab' * 23}", tenant=admin_tenant,
                                             name="faq")
    first = template.add_version("Answer from the FAQ.")
    assert change_url(template) == f"/admin/prompts/prompttemplate/pmpt_5F22{'ab' * 23}/change/"
    response = admin_post(client, change_url(template), admin_tenant, template,
                          "Answer briefly.", [first])
    assert (response.status_code, response["Location"]) == (
        302, "/admin/prompts/prompttemplate/")
    assert [v.instructions for v in template.versions.order_by("number")] == [
        "Answer from the FAQ.", "Answer briefly."]
