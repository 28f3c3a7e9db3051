"""Run queue messages: the response id, or the id with the run's job when the web sends
it (a foreground run that reads nothing stored); a job the message cannot carry stays in
the database, and the worker reads it with its claim."""
from datetime import datetime, timezone

import orjson

from responses_app.delivery.jobs import (
    JOB_COLUMNS, MAX_JOB_BYTES, Awaited, Job, job_of_message, parse_run_message, run_message)
from responses_app.delivery.redelivery import resent_form

JOB = {"tenant_id": 7, "model": "m", "store": True, "background": False,
       "previous_response_id": None, "conversation_id": None,
       "request": {"instructions": None, "params": {}, "include": [], "context": {}},
       "input_items": [{"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "hi"}]}],
       "resource": {"id": "resp_1", "status": "queued"}}


def test_a_job_travels_with_its_id():
    assert set(JOB) == set(JOB_COLUMNS)
    message = run_message("resp_1", JOB)
    assert orjson.loads(message) == {"id": "resp_1", "job": JOB}
    assert parse_run_message(message) == ("resp_1", JOB)


def test_an_id_alone_is_the_message_without_a_job():
    assert run_message("resp_1") == b"resp_1"
    assert parse_run_message(b"resp_1") == ("resp_1", None)


def test_a_job_too_large_for_a_message_stays_in_the_database():
    text = "x" * MAX_JOB_BYTES
    large = {**JOB, "input_items": [{"type": "message", "role": "user",
                                     "content": [{"type": "input_text", "text": text}]}]}
    assert run_message("resp_1", large) == b"resp_1"


def test_a_job_orjson_cannot_encode_stays_in_the_database():
    beyond_64_bits = {**JOB, "request": {**JOB["request"], "params": {"seed": 2 ** 70}}}
    assert run_message("resp_1", beyond_64_bits) == b"resp_1"


def test_a_trace_context_travels_with_the_id_and_with_the_job():
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert orjson.loads(run_message("resp_1", None, trace)) == {
        "id": "resp_1", "job": None, "trace": trace}
    assert job_of_message(run_message("resp_1", None, trace)) == ("resp_1", None, trace)
    message = run_message("resp_1", JOB, trace)
    assert orjson.loads(message) == {"id": "resp_1", "job": JOB, "trace": trace}
    response_id, job, carried = job_of_message(message)
    assert (response_id, job.columns(), job.carried, carried) == ("resp_1", JOB, True, trace)
    assert job_of_message(b"resp_1") == ("resp_1", None, None)


def test_a_carried_job_travels_with_its_creation_time_and_goes_back_marked_resent():
    created_at = datetime(2026, 11, 26, 12, 0, 1, 250000, tzinfo=timezone.utc)
    job = Job.of_columns("resp_1", JOB, carried=True)
    job.created_at = created_at
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    message = job.message(trace)
    assert orjson.loads(message) == {"id": "resp_1", "job": JOB, "trace": trace,
                                     "created_at": "2026-11-26T12:00:01.250000+00:00"}
    _, taken, _ = job_of_message(message)
    assert (taken.created_at, taken.carried, taken.resent) == (created_at, True, False)
    _, resent, resent_trace = job_of_message(resent_form(message))
    assert (resent.columns(), resent.created_at, resent.resent, resent_trace) == (
        JOB, created_at, True, trace)
    assert resent_form(b"resp_2") == b"resp_2"


def test_a_carried_job_given_back_abandoned_stays_abandoned():
    message = Job.of_columns("resp_1", JOB, carried=True).message()
    abandoned = resent_form(message, abandoned=True)
    assert orjson.loads(abandoned) == {"id": "resp_1", "job": JOB, "resent": True,
                                       "abandoned": True}
    again = resent_form(abandoned)  # its copy, given back when the database is still away
    assert again == abandoned
    _, job, _ = job_of_message(again)
    assert (job.columns(), job.carried, job.resent, job.abandoned) == (JOB, True, True, True)
    _, resent, _ = job_of_message(resent_form(message))
    assert (resent.resent, resent.abandoned) == (True, False)


def test_only_a_job_a_message_can_carry_is_carriable():
    job = Job.of_columns("resp_1", JOB, carried=True)
    assert job.carriable() is True
    assert orjson.loads(job.message()) == {"id": "resp_1", "job": JOB}  # its kept encoding
    text = "x" * MAX_JOB_BYTES
    large = {**JOB, "input_items": [{"type": "message", "role": "user",
                                     "content": [{"type": "input_text", "text": text}]}]}
    assert Job.of_columns("resp_1", large).carriable() is False
    beyond_64_bits = {**JOB, "request": {**JOB["request"], "params": {"seed": 2 ** 70}}}
    assert Job.of_columns("resp_1", beyond_64_bits).carriable() is False


def test_a_job_the_web_wrote_for_a_waiting_client_says_so_and_goes_back_abandoned():
    context = {"request_id": "req_1", "api_key_id": 3, "limited": True, "slot": "s",
               "estimated_tokens": 70000}
    job = Job.of_columns("resp_1", {**JOB, "request": {**JOB["request"], "context": context}})
    assert job.message() == b"resp_1"  # no client waits: the id alone
    job.awaited = True
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    message = job.message(trace)
    awaited = {"tenant_id": 7, "model": "m", "context": context}
    assert orjson.loads(message) == {"id": "resp_1", "job": None, "awaited": awaited,
                                     "trace": trace}
    assert job_of_message(message) == ("resp_1", Awaited("resp_1", 7, "m", context), trace)
    assert resent_form(message) == message  # given back by the watchdog: the same
    abandoned = resent_form(message, abandoned=True)
    assert orjson.loads(abandoned) == {"id": "resp_1", "job": None, "awaited": awaited,
                                       "abandoned": True, "trace": trace}
    assert resent_form(abandoned) == abandoned  # its copy, given back again
    assert job_of_message(abandoned)[1] == Awaited("resp_1", 7, "m", context, abandoned=True)
