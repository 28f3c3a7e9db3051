"""Small helpers the checks share: failing with a reason, a response's dump, polling a
background response to its end, and the prompts and tool they send. The prompts read as
instructions to a real model and script the test suite's fake model alike (a line
`call NAME {json}` makes it call NAME)."""
import time

TERMINAL_STATUSES = ("completed", "incomplete", "failed", "cancelled")
WEATHER_TOOL = {"type": "function", "name": "get_weather",
                "description": "The current weather in a city.", "strict": True,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"], "additionalProperties": False}}
TOOL_PROMPT = ('Use the get_weather tool for Paris; answer only with the tool call.\n'
               'call get_weather {"city": "Paris"}')
POLL_SECONDS = 0.25


class CheckFailed(AssertionError):
    """A check saw the deployment break the API; the message says how."""


def expect(condition, reason: str) -> None:
    if not condition:
        raise CheckFailed(reason)


def dump(model) -> dict:
    """An SDK object (a response, an event) as the JSON it came from."""
    return model.model_dump(mode="json", exclude_unset=True, warnings=False)


def expect_completed(response, what: str) -> None:
    expect(response.status == "completed",
           f"{what}: status {response.status!r}, error {dump(response).get('error')}")


def wait_until_finished(client, response_id: str, timeout: float):
    """Poll a response until it reaches a terminal status; return it."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.responses.retrieve(response_id)
        if response.status in TERMINAL_STATUSES:
            return response
        expect(time.monotonic() < deadline,
               f"{response_id} still {response.status!r} after {timeout:g} s")
        time.sleep(POLL_SECONDS)
