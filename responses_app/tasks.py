"""Celery tasks: ids in, a service call out."""
from celery import shared_task

from .dispatch import PRUNE_TASK, RUN_TASK
from .retention import responses_prune
from .worker.run import execute_run


# Runs now travel on the run queue (dispatch.py); this task still runs the messages a web
# process of an earlier version sent during an upgrade.
@shared_task(name=RUN_TASK, acks_late=True, ignore_result=True)
def run_response(response_id: str) -> None:
    execute_run(response_id)


@shared_task(name=PRUNE_TASK, ignore_result=True)
def prune_responses() -> int:
    return responses_prune()
