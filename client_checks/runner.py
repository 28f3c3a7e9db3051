"""Runs every client check against one deployment and renders the pass/fail table. A check's
failure is its exception's message (an SDK error says its HTTP status); one failing check
does not stop the others."""
import time
from dataclasses import dataclass

import openai

from client_checks import basic_checks, durable_checks

CHECKS = (
    ("streaming", basic_checks.check_streaming),
    ("chain", basic_checks.check_chain),
    ("item reference", basic_checks.check_item_reference),
    ("function tool", basic_checks.check_function_tool),
    ("background", durable_checks.check_background),
    ("cancel", durable_checks.check_cancel),
    ("stream resume", durable_checks.check_resume),
    ("conversations", durable_checks.check_conversations),
)


@dataclass(frozen=True)
class Result:
    name: str
    passed: bool
    detail: str
    seconds: float


def run_checks(base_url: str, api_key: str, model: str, timeout: float = 60.0) -> list[Result]:
    """Drive the installed openai SDK through every check; one Result per check."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
    return [_run(name, check, client, model) for name, check in CHECKS]


def _run(name: str, check, client, model: str) -> Result:
    started = time.monotonic()
    try:
        detail, passed = check(client, model), True
    except AssertionError as error:  # CheckFailed, StreamBroken: the reason is the message
        detail, passed = str(error), False
    except openai.APIStatusError as error:
        detail, passed = f"HTTP {error.status_code}: {_message(error)}", False
    except openai.APIConnectionError as error:
        detail, passed = f"cannot connect: {error.__cause__ or error}", False
    except Exception as error:  # noqa: BLE001 - any failure is this check's result
        detail, passed = f"{type(error).__name__}: {error}", False
    return Result(name, passed, " ".join(str(detail).split()), time.monotonic() - started)


def _message(error) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    return str(body.get("message") or error.message)


def render(results: list[Result], sdk_version: str = openai.__version__) -> str:
    """The table: one line per check, then a summary line."""
    width = max(len(result.name) for result in results)
    lines = [f"openai SDK {sdk_version}", f"{'check':<{width}}  result  seconds  detail"]
    for result in results:
        verdict = "pass" if result.passed else "FAIL"
        lines.append(f"{result.name:<{width}}  {verdict:<6}  {result.seconds:7.2f}  "
                     f"{result.detail}")
    failed = sum(not result.passed for result in results)
    lines.append(f"check_clients: {len(results)} checks, {len(results) - failed} passed, "
                 f"{failed} failed")
    return "\n".join(lines)
