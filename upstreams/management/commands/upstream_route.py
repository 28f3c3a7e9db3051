"""`manage.py upstream_route set|delete|list`: upstream routes from the command line
(the admin edits the same rows). The key is read from the environment variable named by
--api-key-env, so it stays out of shell history and process lists."""
import os

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from upstreams.models import UpstreamRoute


class Command(BaseCommand):
    help = "Create or update (set), delete or list upstream routes."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        setter = actions.add_parser("set", help="create or update the route NAME")
        setter.add_argument("name")
        setter.add_argument("--model", required=True, dest="model_pattern",
                            help="a model name, or a prefix ending in '*'")
        setter.add_argument("--base-url", required=True)
        setter.add_argument("--replica-url", action="append", default=[], dest="replica_urls",
                            metavar="URL", help="another base URL of the same model server "
                            "(a replica; repeatable)")
        setter.add_argument("--api-key-env", help="environment variable holding the API key")
        setter.add_argument("--connect-timeout", type=float)
        setter.add_argument("--read-timeout", type=float)
        setter.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                            help="an extra header sent upstream (repeatable)")
        setter.add_argument("--max-concurrency", type=int, default=0)
        setter.add_argument("--context-window", type=int, help="tokens (empty: unknown)")
        setter.add_argument("--token-counter", default="estimate",
                            choices=["estimate", "tokenizer", "vllm", "llamacpp"])
        setter.add_argument("--tokenizer-path", default="", help="a local tokenizer.json")
        setter.add_argument("--disabled", action="store_true")
        deleter = actions.add_parser("delete", help="delete the route NAME")
        deleter.add_argument("name")
        actions.add_parser("list", help="list the routes (never their keys)")

    def handle(self, *args, action, **options):
        getattr(self, f"handle_{action}")(**options)

    def handle_set(self, *, name, api_key_env, header, disabled, **options):
        route = UpstreamRoute.objects.filter(name=name).first() or UpstreamRoute(name=name)
        for field in ("model_pattern", "base_url", "connect_timeout", "read_timeout",
                      "max_concurrency", "context_window", "token_counter", "tokenizer_path"):
            setattr(route, field, options[field])
        route.replica_urls = "\n".join(options["replica_urls"])
        route.extra_headers = dict(_header(h) for h in header)
        route.enabled = not disabled
        if api_key_env:
            if api_key_env not in os.environ:
                raise CommandError(f"The environment variable {api_key_env} is not set.")
            route.set_api_key(os.environ[api_key_env])
        try:
            route.full_clean()
        except ValidationError as exc:
            raise CommandError(f"Invalid route: {exc.message_dict}") from None
        route.save()
        self.stdout.write(f"Saved upstream route {route}.")

    def handle_delete(self, *, name, **options):
        deleted, _ = UpstreamRoute.objects.filter(name=name).delete()
        if not deleted:
            raise CommandError(f"No upstream route named {name!r}.")
        self.stdout.write(f"Deleted upstream route {name!r}.")

    def handle_list(self, **options):
        for route in UpstreamRoute.objects.all():
            key = "key set" if route.api_key_encrypted else "no key"
            state = "" if route.enabled else ", disabled"
            replicas = "".join(f", {url}" for url in route.replica_url_list())
            self.stdout.write(f"{route.name}: {route.model_pattern} -> {route.base_url}{replicas} "
                              f"({key}, max concurrency {route.max_concurrency or 'unlimited'}"
                              f"{state})")


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise CommandError(f"--header needs NAME=VALUE, got {text!r}.")
    return name.strip(), value.strip()
