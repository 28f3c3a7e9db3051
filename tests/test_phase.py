"""Assistant `phase`: accepted on input assistant messages (kept in the stored item, not
sent upstream), and set on output messages when the run asks for it (exact events)."""
import pytest

from responses_app.create.request import parse_create_request
from responses_app.errors import InvalidRequest
from responses_app.translation.chat_request import build_chat_request
from responses_app.translation.phase import phase_wanted
from tests.test_state_machine import chunk, function_call, text_message, translate


def test_phase_on_an_input_assistant_message_is_stored_and_not_sent_upstream():
    request = parse_create_request({"model": "m", "input": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Checking.", "phase": "commentary"},
        {"role": "assistant", "content": "Done.", "phase": "final_answer"},
        {"role": "user", "content": "thanks"}]})
    assert [item.get("phase") for item in request.input_items] == [
        None, "commentary", "final_answer", None]
    chat = build_chat_request(model="m", instructions=None, items=request.input_items,
                              params=request.params, include=[], max_tokens_param="max_tokens")
    assert chat.body["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Checking.\nDone."},
        {"role": "user", "content": "thanks"}]


@pytest.mark.parametrize("message", [
    {"role": "user", "content": "hi", "phase": "commentary"},
    {"role": "assistant", "content": "hi", "phase": "thinking"},
])
def test_a_bad_phase_is_a_400(message):
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request({"model": "m", "input": [message]})
    assert caught.value.param == "input[0].phase"
    assert caught.value.message == ("Invalid value for 'input[0].phase': only an assistant "
                                    "message has a phase, one of ['commentary', 'final_answer'].")


def test_phase_is_wanted_for_matching_models_or_a_history_with_phases():
    said = [{"type": "message", "role": "assistant", "phase": "final_answer", "content": []}]
    assert phase_wanted("gpt-5.3-codex", ["gpt-5*-codex"], []) is True
    assert phase_wanted("llama", ["gpt-5*-codex"], []) is False
    assert phase_wanted("llama", [], said) is True


def call_chunk():
    return chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                  "function": {"name": "get_weather", "arguments": "{}"}}]})


def test_text_before_a_call_is_commentary():
    events, response = translate([chunk({"content": "Let me check."}), call_chunk(),
                                  chunk({}, "tool_calls")], phase=True)
    message = {**text_message("msg_0", "Let me check."), "phase": "commentary"}
    assert response["output"] == [message, function_call("fc_1", "call_1", "get_weather", "{}")]
    # the added message has no phase yet: it is decided when the message closes
    assert [e["item"].get("phase") for e in events
            if e["type"] == "response.output_item.added"] == [None, None]
    assert [e["item"].get("phase") for e in events
            if e["type"] == "response.output_item.done"] == ["commentary", None]


def test_the_last_message_is_the_final_answer():
    _, response = translate([chunk({"content": "Sunny."}), chunk({}, "stop")], phase=True)
    assert response["output"] == [{**text_message("msg_0", "Sunny."), "phase": "final_answer"}]


def test_no_phase_unless_asked():
    _, response = translate([chunk({"content": "Sunny."}), chunk({}, "stop")])
    assert response["output"] == [text_message("msg_0", "Sunny.")]
