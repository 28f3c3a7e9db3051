"""`manage.py check_clients` run as a user runs it, against the production deployment and the
fake upstream: every check passes with `fake-tool-caller` (it calls the tool the prompt
names and counts slowly when asked to, so the cancel lands mid-run); a model that calls no
tool fails the tool check alone; a wrong key fails every check with the gateway's 401. The
exit status is 0 only when every check passed."""
import re
import subprocess

from tests.servers import PYTHON, ROOT

ROW = re.compile(r"^(?P<name>\S+(?: \S+)?)\s+(?P<verdict>pass|FAIL)\s+\d+\.\d\d  (?P<detail>.*)$")
CHECKS = ["streaming", "chain", "item reference", "function tool", "background", "cancel",
          "stream resume", "conversations"]


def check_clients(production, api_key: str, model: str) -> tuple[int, list[tuple], str, str]:
    """Run the command; return its exit status, its table rows, its last line and stderr."""
    done = subprocess.run(
        [PYTHON, "manage.py", "check_clients", "--base-url", production.base_url,
         "--api-key", api_key, "--model", model],
        cwd=ROOT, env=production.env, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["check", "result", "seconds", "detail"], done.stdout + done.stderr
    rows = [ROW.match(line) for line in lines[2:-1]]
    assert all(rows), done.stdout
    return (done.returncode, [(row["name"], row["verdict"], row["detail"]) for row in rows],
            lines[-1], done.stderr)


def test_every_check_passes_against_the_deployment(production, tenant_key, clean_upstream):
    status, rows, summary, errors = check_clients(production, tenant_key, "fake-tool-caller")
    assert rows == [
        ("streaming", "pass", "9 events"),
        ("chain", "pass", "2 responses"),
        ("item reference", "pass", "a stored item resolves, an unknown one is item_not_found"),
        ("function tool", "pass", 'get_weather({"city": "Paris"})'),
        ("background", "pass", "queued -> completed"),
        ("cancel", "pass", "cancelled"),
        ("stream resume", "pass", "resumed after event 4 of 9"),
        ("conversations", "pass", "4 items"),
    ]
    assert (status, summary, errors) == (0, "check_clients: 8 checks, 8 passed, 0 failed", "")
    last_messages = [request["body"]["messages"][-1] for request in clean_upstream.requests()
                     if "Count from" not in str(request["body"]["messages"])]
    assert last_messages == [
        {"role": "user", "content": "Say hello in one short sentence."},
        {"role": "user", "content": "My favourite colour is teal. Say OK."},
        {"role": "user", "content": "What is my favourite colour?"},
        {"role": "user", "content": "Say hello."},
        {"role": "user", "content": "Say it again, shorter."},
        {"role": "user", "content": 'Use the get_weather tool for Paris; answer only with the '
                                    'tool call.\ncall get_weather {"city": "Paris"}'},
        {"role": "tool", "tool_call_id": "call_0", "content": "18C and sunny"},
        {"role": "user", "content": "Say hello."},
        {"role": "user", "content": "Say hi."},
        {"role": "user", "content": "Say hello in one short sentence."},
        {"role": "user", "content": "My name is Ada. Say OK."},
        {"role": "user", "content": "What is my name?"},
    ]
    # the second turn of the conversation carries the first
    assert [message["content"] for message in clean_upstream.requests()[-1]["body"]["messages"]
            ] == ["My name is Ada. Say OK.", "No tools.", "What is my name?"]


def test_a_model_that_calls_no_tool_fails_the_tool_check_alone(production, tenant_key):
    status, rows, summary, errors = check_clients(production, tenant_key, "fake-text")
    assert [(name, verdict) for name, verdict, _ in rows] == [
        (name, "FAIL" if name == "function tool" else "pass") for name in CHECKS]
    assert rows[3] == ("function tool", "FAIL", "no get_weather call in the output: ['message']")
    assert (status, summary) == (1, "check_clients: 8 checks, 7 passed, 1 failed")
    assert errors == "CommandError: 1 of 8 client checks failed\n"


def test_a_wrong_key_fails_every_check_and_the_command(production):
    status, rows, summary, errors = check_clients(production, "sk-wrong", "fake-tool-caller")
    assert rows == [(name, "FAIL", "HTTP 401: Incorrect API key provided.") for name in CHECKS]
    assert (status, summary) == (1, "check_clients: 8 checks, 0 passed, 8 failed")
    assert errors == "CommandError: 8 of 8 client checks failed\n"
