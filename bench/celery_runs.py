"""The run queue's library alternative, for bench.run_queue: a Celery task per run,
at-least-once (`acks_late`, the Redis transport's ack emulation: each message is kept in
the `unacked` hash until its task returns), on a thread pool, as a worker would run it.
The task does nothing: what is measured is what delivering a run costs. The broker is
`BENCH_CELERY_BROKER` (set by bench.run_queue)."""
import os

from celery import Celery

app = Celery("bench_runs", broker=os.environ.get("BENCH_CELERY_BROKER", "redis://127.0.0.1:6379/0"))
app.conf.update(
    task_acks_late=True,
    task_ignore_result=True,
    worker_prefetch_multiplier=1,
    broker_transport_options={"ack_emulation": True, "visibility_timeout": 3600},
    worker_hijack_root_logger=False,
    task_default_queue="bench_runs",
)


@app.task(name="bench.run")
def run(message: str) -> None:
    return None
