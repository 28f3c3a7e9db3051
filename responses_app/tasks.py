"""Celery tasks: ids in, a service call out."""
from celery import shared_task

from .dispatch import RUN_TASK
from .worker.run import execute_run


@shared_task(name=RUN_TASK, acks_late=True, ignore_result=True)
def run_response(response_id: str) -> None:
    execute_run(response_id)

