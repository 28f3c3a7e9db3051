"""At-least-once delivery of the run queue (jobs.RUN_QUEUE_KEY), by construction.

A worker moves each message it takes from the queue onto its own processing list
(`BLMOVE gw:runs gw:processing:<worker>`) in one atomic step, and removes it from there
(`LREM`) once the run's claim is settled: won, or lost to another run. Its worker id is in
the sorted set `gw:consumers` (scored by when its heartbeat last registered it) while it
may hold messages. A message whose worker dies before its claim is settled is therefore
still in Redis: the watchdog moves the processing list of every consumer without a fresh
heartbeat back onto the queue (RECLAIM_SCRIPT), and a live worker runs it, within the
heartbeat's TTL and a watchdog interval. A run is still never generated twice: the claim
is one conditional statement (lifecycle.claim_job, lifecycle.claim_carried).

A worker stopping cleanly gives back what it still holds and leaves the set. The watchdog
removes a dead consumer only once its list is empty and it has not registered for
FORGET_CONSUMER_SECONDS: a worker the watchdog took for dead while it still ran (its
heartbeat late) stays known, so whatever it takes afterwards is found if it then dies.

Messages given back are marked `resent` (jobs.py): their run claims the response before it
calls the upstream, so a worker that only looked dead (a partition) and a worker running
the message again cannot both call it. One that carries its job keeps it: its row may not
be written yet (its run writes it as it claims it). A run whose client waits (its message
carries its job, or says so: jobs.Awaited) and whose claim met a database outage for
DATABASE_WAIT_SECONDS gives its message back marked `abandoned` before its client is
answered 503 (worker/run_abandon.py): from then on no copy of it can run, and the copy
that is left removes the row the lost claim may have written, or the web wrote.
"""
import logging
import time

from .jobs import RUN_QUEUE_KEY, Awaited, Job, Unreadable, job_of_message, run_message

log = logging.getLogger(__name__)

PROCESSING_PREFIX = "gw:processing:"
# What a run settles its message with (besides True: claim won or lost, and False: the
# claim failed, give it back to run again) when it abandons it (worker/run_abandon.py).
ABANDONED = "abandoned"
CONSUMERS_KEY = "gw:consumers"  # worker id -> when its heartbeat last registered it
FORGET_CONSUMER_SECONDS = 3600

# Give messages of one processing list (KEYS[1]) back to the queue (KEYS[2]): ARGV[1] is
# the list's worker, ARGV[2] the registration time before which it is forgotten, then
# pairs (the message as taken, the message to queue). Each goes back only if it is still
# on the list (its worker may have settled it meanwhile); the worker leaves the consumers
# (KEYS[3]) if its list is empty and it registered before ARGV[2].
RECLAIM_SCRIPT = """
local given = 0
for i = 3, #ARGV, 2 do
    if redis.call('LREM', KEYS[1], 1, ARGV[i]) == 1 then
        redis.call('RPUSH', KEYS[2], ARGV[i + 1])
        given = given + 1
    end
end
local registered = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[1]) or '0')
if redis.call('LLEN', KEYS[1]) == 0 and registered < tonumber(ARGV[2]) then
    redis.call('ZREM', KEYS[3], ARGV[1])
end
return given
"""


def register(pipe, worker: str) -> None:
    """Add to `pipe` (a worker's heartbeat) the worker's registration as a consumer."""
    pipe.zadd(CONSUMERS_KEY, {worker: time.time()})


def processing_key(worker: str) -> str:
    """The processing list of worker `worker`."""
    return PROCESSING_PREFIX + worker


def resent_form(message: bytes, abandoned: bool = False) -> bytes:
    """The message as it goes back to the queue: marked resent (its run claims first), and
    abandoned if it was or `abandoned` (a message that carries its job, or says that a
    client waits for its run: jobs.Awaited)."""
    response_id, job, trace = job_of_message(message)
    if job is None:
        return run_message(response_id, None, trace)
    if isinstance(job, Unreadable):  # as it is: its run ends it
        return message
    if isinstance(job, (Job, Awaited)):  # a chat run's (ChatJob) claims no row: never abandoned
        job.abandoned = job.abandoned or abandoned
    return job.message(trace, resent=True)


def give_back_args(worker: str, messages: list[bytes], forget_before: float = 0,
                   abandoned: bool = False) -> tuple[list[str], list]:
    """RECLAIM_SCRIPT's keys and arguments to give `messages` of `worker` back (and forget
    the worker if it registered before `forget_before` and holds nothing more); marked
    abandoned if `abandoned`."""
    args: list = [worker, forget_before]
    for message in messages:
        args += (message, resent_form(message, abandoned))
    return [processing_key(worker), RUN_QUEUE_KEY, CONSUMERS_KEY], args


def reclaim_from_dead_workers(client, alive) -> int:
    """Give back to the queue the messages held by consumers that `alive(ids)` (a set of
    the live ones among `ids`) says are dead; how many went back. Sync (the watchdog)."""
    consumers = {worker.decode() for worker in client.zrange(CONSUMERS_KEY, 0, -1)}
    if not consumers:
        return 0
    script = client.register_script(RECLAIM_SCRIPT)
    forget_before = time.time() - FORGET_CONSUMER_SECONDS
    given = 0
    for worker in sorted(consumers - alive(consumers)):
        messages = client.lrange(processing_key(worker), 0, -1)
        keys, args = give_back_args(worker, messages, forget_before)
        given += script(keys=keys, args=args)
    if given:
        log.warning("gave back %d runs taken by workers that stopped", given)
    return given
