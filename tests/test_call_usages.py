"""A response's usage is the sum of every upstream call of its run (translation/call_usages),
whichever way it ends: a compaction's summary call, the turns, and a turn cut short. Pure:
the compacting translator fed recorded chunks, no I/O."""
from responses_app.create.request import parse_create_request
from responses_app.translation.compaction_events import CompactingTranslator
from responses_app.translation.resource import new_response_resource
from responses_app.translation.state_machine import TranslatorOptions
from tests.test_state_machine import sequential_ids
from tests.upstream_scenarios import CREATED, SCENARIOS

SUMMARY = {"prompt_tokens": 40, "completion_tokens": 7}


def compacted_translator():
    params = parse_create_request({"model": "m", "input": "hi"}).params
    response = new_response_resource(
        response_id="resp_test", created_at=CREATED, model="m", params=params,
        instructions=None, previous_response_id=None, store=True, background=True,
        status="in_progress")
    t = CompactingTranslator(response, TranslatorOptions(ids=sequential_ids(),
                                                         now=lambda: CREATED))
    t.start()
    _, item = t.open_compaction("unfinished")
    t.count_call(SUMMARY)
    t.compaction_done(item, "sealed")
    return t


def usage(input_tokens, output_tokens):
    return {"input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def test_a_finished_response_counts_the_summary_and_its_answer():
    t = compacted_translator()
    for chunk in SCENARIOS["fake-length"].chunks:  # reports 12 + 3
        t.feed(chunk)
    t.finish()
    assert t.response["usage"] == usage(40 + 12, 7 + 3)


def test_a_response_cancelled_in_its_answer_counts_the_summary_and_the_cut_call():
    t = compacted_translator()
    for chunk in SCENARIOS["fake-length"].chunks[:2]:  # no usage yet
        t.feed(chunk)
    _, usage_missing = t.close_cut_turn()
    assert usage_missing is True
    t.count_cut_turn({"prompt_tokens": 20, "completion_tokens": 1})
    t.cancel()
    assert t.response["usage"] == usage(40 + 20, 7 + 1)


def test_a_response_cancelled_before_its_answer_counts_the_summary():
    t = compacted_translator()
    t.cancel()
    assert t.response["usage"] == usage(40, 7)


def test_a_compaction_cut_before_its_summary_is_closed_first_with_its_unfinished_token():
    """Failed while its summary is written: the compaction item is done (with the token it
    was opened with) before the other open items and the end."""
    params = parse_create_request({"model": "m", "input": "hi"}).params
    response = new_response_resource(
        response_id="resp_test", created_at=CREATED, model="m", params=params,
        instructions=None, previous_response_id=None, store=True, background=False,
        status="in_progress")
    t = CompactingTranslator(response, TranslatorOptions(ids=sequential_ids(),
                                                         now=lambda: CREATED))
    t.start()
    opened, item = t.open_compaction("the unfinished token")
    assert opened == [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": item["id"], "type": "compaction", "encrypted_content": ""}},
        {"type": "response.compaction.compacting", "item_id": item["id"], "output_index": 0}]
    t.count_call(SUMMARY)
    closed = {"id": item["id"], "type": "compaction",
              "encrypted_content": "the unfinished token"}
    assert t.fail("server_error", "cut") == [
        {"type": "response.output_item.done", "output_index": 0, "item": closed},
        {"type": "response.failed", "response": t.response}]
    assert (t.response["output"], t.response["usage"]) == ([closed], usage(40, 7))
    assert t.finish("steered")[:-1] == []  # closed once
