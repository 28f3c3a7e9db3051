"""Celery tasks: the periodic ones `celery beat` sends (runs travel on the run queue:
dispatch.py)."""
from celery import shared_task

from .retention import responses_prune

PRUNE_TASK = "responses_app.prune_responses"


@shared_task(name=PRUNE_TASK, ignore_result=True)
def prune_responses() -> int:
    return responses_prune()
