"""Upstream routes in the database: resolution, the per-process cache, keys encrypted at
rest and their rotation, the admin's write-only key, the management commands."""
import io

import pytest
from cryptography.fernet import Fernet
from django.core.checks import run_checks
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import override_settings

from upstreams import routing
from upstreams.models import UpstreamRoute
from upstreams.secrets import SecretUnreadable

pytestmark = pytest.mark.django_db

KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()


@pytest.fixture(autouse=True)
def fresh_route_table():
    routing.forget_routes()
    yield
    routing.forget_routes()


def make_route(name, pattern, key="", **fields):
    route = UpstreamRoute(name=name, model_pattern=pattern,
                          base_url=f"http://{name}.internal:8000/v1", **fields)
    route.set_api_key(key)
    route.save()
    return route


def test_it_prefers_an_exact_name_then_the_longest_prefix_then_the_default():
    make_route("gpt", "gpt-*")
    make_route("gpt4", "gpt-4*")
    make_route("mini", "gpt-4o-mini")
    table = routing.route_table()
    assert table.route_for("gpt-4o-mini").name == "mini"
    assert table.route_for("gpt-4o").name == "gpt4"
    assert table.route_for("gpt-3.5").name == "gpt"
    assert table.route_for("llama3").name == routing.DEFAULT_ROUTE_NAME
    assert table.route_for("llama3").base_url == "http://127.0.0.1:11434/v1"


def test_it_ignores_disabled_routes():
    make_route("off", "gpt-*", enabled=False)
    assert routing.route_for_model("gpt-4").name == routing.DEFAULT_ROUTE_NAME


def test_it_resolves_without_a_query_once_loaded(django_assert_num_queries):
    make_route("gpt", "gpt-*", key="sk-1")
    with django_assert_num_queries(1):
        routing.route_for_model("gpt-4")
    with django_assert_num_queries(0):
        for _ in range(100):
            assert routing.route_for_model("gpt-4").api_key == "sk-1"


def test_a_save_in_this_process_is_seen_by_the_next_lookup():
    route = make_route("gpt", "gpt-*", key="sk-1")
    assert routing.route_for_model("gpt-4").api_key == "sk-1"
    route.set_api_key("sk-2")
    route.save()
    assert routing.route_for_model("gpt-4").api_key == "sk-2"
    route.delete()
    assert routing.route_for_model("gpt-4").name == routing.DEFAULT_ROUTE_NAME


def test_a_route_carries_its_timeouts_headers_and_limit_or_the_defaults():
    make_route("custom", "a", key="sk-a", connect_timeout=2, read_timeout=30,
               extra_headers={"X-Org": "acme"}, max_concurrency=3)
    make_route("plain", "b")
    custom, plain = routing.route_for_model("a"), routing.route_for_model("b")
    assert (custom.connect_timeout, custom.idle_timeout, custom.max_concurrency) == (2, 30, 3)
    assert custom.request_headers() == {"authorization": "Bearer sk-a", "x-org": "acme"}
    assert (plain.connect_timeout, plain.idle_timeout, plain.max_concurrency) == (10, 120, 0)
    assert plain.request_headers() == {}


@override_settings(ENCRYPTION_KEYS=[KEY_A])
def test_the_key_is_stored_encrypted_under_the_first_key():
    route = make_route("gpt", "gpt-*", key="sk-secret")
    stored = UpstreamRoute.objects.get(pk=route.pk).api_key_encrypted
    assert "sk-secret" not in stored
    assert Fernet(KEY_A.encode()).decrypt(stored.encode()) == b"sk-secret"


def test_rotation_reencrypts_every_key_under_the_new_first_key():
    with override_settings(ENCRYPTION_KEYS=[KEY_A]):
        make_route("one", "one", key="sk-one")
        make_route("two", "two", key="sk-two")
        make_route("keyless", "three")
    with override_settings(ENCRYPTION_KEYS=[KEY_B, KEY_A]):
        call_command("rotate_upstream_keys", stdout=io.StringIO())
    with override_settings(ENCRYPTION_KEYS=[KEY_B]):  # the old key is gone
        assert {r.name: r.api_key() for r in UpstreamRoute.objects.all()} == {
            "one": "sk-one", "two": "sk-two", "keyless": ""}
    with override_settings(ENCRYPTION_KEYS=[KEY_A]), pytest.raises(SecretUnreadable):
        UpstreamRoute.objects.get(name="one").api_key()


def test_rotation_reports_keys_it_cannot_open():
    with override_settings(ENCRYPTION_KEYS=[KEY_A]):
        make_route("lost", "lost", key="sk-lost")
    with override_settings(ENCRYPTION_KEYS=[KEY_B]), pytest.raises(CommandError, match="lost"):
        call_command("rotate_upstream_keys", stdout=io.StringIO())


def test_a_route_whose_key_does_not_decrypt_is_kept_and_says_why():
    with override_settings(ENCRYPTION_KEYS=[KEY_A]):
        make_route("gpt", "gpt-*", key="sk-secret")
    routing.forget_routes()
    with override_settings(ENCRYPTION_KEYS=[KEY_B]):
        route = routing.route_for_model("gpt-4")
    # never silently sent to another upstream: the run fails with this problem
    assert route.name == "gpt"
    assert route.problem == "The API key of upstream route 'gpt' cannot be decrypted."


@override_settings(ENCRYPTION_KEYS=["not-a-fernet-key"])
def test_a_malformed_encryption_key_fails_the_system_checks():
    assert [e.id for e in run_checks() if e.id.startswith("upstreams.")] == ["upstreams.E001"]


def test_the_admin_key_field_is_write_only(admin_client):
    page = admin_client.get("/admin/upstreams/upstreamroute/add/")
    assert page.status_code == 200
    form = {"name": "gpt", "model_pattern": "gpt-*", "base_url": "http://vllm:8000/v1",
            "api_key": "sk-admin-secret", "extra_headers": '{"x-org": "acme"}',
            "max_concurrency": "0", "enabled": "on"}
    assert admin_client.post("/admin/upstreams/upstreamroute/add/", form).status_code == 302
    route = UpstreamRoute.objects.get(name="gpt")
    assert route.api_key() == "sk-admin-secret"
    change_url = f"/admin/upstreams/upstreamroute/{route.pk}/change/"
    change_page = admin_client.get(change_url).content.decode()
    assert "sk-admin-secret" not in change_page
    assert route.api_key_encrypted not in change_page

    admin_client.post(change_url, {**form, "api_key": "", "max_concurrency": "4"})
    route.refresh_from_db()
    assert (route.api_key(), route.max_concurrency) == ("sk-admin-secret", 4)  # blank keeps it

    admin_client.post(change_url, {**form, "api_key": "", "clear_api_key": "on"})
    route.refresh_from_db()
    assert route.api_key_encrypted == ""


@pytest.mark.parametrize("field, value", [
    ("model_pattern", "*"), ("model_pattern", "g*pt"), ("base_url", "ftp://x/v1"),
    ("extra_headers", '{"bad header": "x"}'), ("extra_headers", '["x"]'),
])
def test_the_admin_refuses_invalid_routes(admin_client, field, value):
    form = {"name": "gpt", "model_pattern": "gpt-*", "base_url": "http://vllm:8000/v1",
            "extra_headers": "{}", "max_concurrency": "0", field: value}
    page = admin_client.post("/admin/upstreams/upstreamroute/add/", form)
    assert page.status_code == 200  # the form again, with its errors
    assert not UpstreamRoute.objects.exists()


def test_the_route_command_sets_lists_and_deletes(monkeypatch, capsys):
    monkeypatch.setenv("ROUTE_KEY", "sk-from-env")
    call_command("upstream_route", "set", "gpt", "--model", "gpt-*", "--base-url",
                 "http://vllm:8000/v1", "--api-key-env", "ROUTE_KEY", "--header", "x-org=acme",
                 "--max-concurrency", "5")
    assert UpstreamRoute.objects.get(name="gpt").api_key() == "sk-from-env"
    call_command("upstream_route", "list")
    listed = capsys.readouterr().out
    assert "gpt: gpt-* -> http://vllm:8000/v1 (key set, max concurrency 5)" in listed
    assert "sk-from-env" not in listed
    with pytest.raises(CommandError, match="base_url"):
        call_command("upstream_route", "set", "bad", "--model", "x", "--base-url", "nope")
    call_command("upstream_route", "delete", "gpt")
    assert not UpstreamRoute.objects.exists()


def test_a_route_names_its_replicas_base_url_first_once_each():
    make_route("pool", "pool-*", replica_urls="http://b.internal:8000/v1/\n\n"
               "  http://c.internal:8000/v1\nhttp://pool.internal:8000/v1\n"
               "http://b.internal:8000/v1")
    make_route("single", "single")
    assert routing.route_for_model("pool-1").replicas == (
        "http://pool.internal:8000/v1", "http://b.internal:8000/v1", "http://c.internal:8000/v1")
    assert routing.route_for_model("single").replicas == ("http://single.internal:8000/v1",)


def test_a_replica_url_is_validated_like_the_base_url():
    route = UpstreamRoute(name="pool", model_pattern="pool-*", base_url="http://a:8000/v1",
                          replica_urls="http://b:8000/v1\nnot a url")
    with pytest.raises(ValidationError) as raised:
        route.full_clean()
    assert raised.value.message_dict == {
        "replica_urls": ["Enter an http:// or https:// URL, e.g. http://vllm:8000/v1."]}


def test_the_command_sets_and_lists_a_routes_replicas(capsys):
    call_command("upstream_route", "set", "pool", "--model", "pool-*",
                 "--base-url", "http://a:8000/v1", "--replica-url", "http://b:8000/v1",
                 "--replica-url", "http://c:8000/v1", "--max-concurrency", "8")
    assert UpstreamRoute.objects.get(name="pool").replica_urls == (
        "http://b:8000/v1\nhttp://c:8000/v1")
    call_command("upstream_route", "list")
    assert capsys.readouterr().out.splitlines()[-1] == (
        "pool: pool-* -> http://a:8000/v1, http://b:8000/v1, http://c:8000/v1 "
        "(no key, max concurrency 8)")


def test_a_route_says_whether_its_model_takes_images_and_what_is_passed_on():
    from responses_app.context.rendering import chat_request_for
    from responses_app.create.request import parse_create_request

    make_route("text-only", "txt-*", accepts_images=False,
               passthrough_params=["prompt_cache_key", "service_tier"])
    create = parse_create_request({"model": "txt-1", "prompt_cache_key": "k7", "input": [
        {"role": "user", "content": [{"type": "input_image", "image_url": "https://i/x.png"}]}]})
    request = {"instructions": None, "params": create.params, "include": []}
    body = chat_request_for("txt-1", request, create.input_items).body
    assert (body["messages"], body["prompt_cache_key"], body["service_tier"]) == (
        [{"role": "user", "content": "[image: https://i/x.png]"}], "k7", "default")
    default = chat_request_for("llama3", request, create.input_items).body
    assert "prompt_cache_key" not in default
    assert default["messages"][0]["content"][0]["type"] == "image_url"
    with pytest.raises(ValidationError):
        UpstreamRoute(name="bad", model_pattern="b", base_url="http://b:1/v1",
                      passthrough_params=["temperature"]).full_clean()
