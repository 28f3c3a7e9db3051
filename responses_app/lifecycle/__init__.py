"""A response's lifecycle, the one place that writes its status: created (queued), claimed
(in_progress) by one run, and ended, completed / incomplete / failed / cancelled by its run
(transitions.py, from event loops), or cancelled while queued, orphaned, never started
(endings.py, from threads), each end settling the run's admission."""
from .endings import (STORE_LOST, WORKER_LOST, cancel_queued, discard_abandoned,  # noqa: F401
                      discard_unstarted, fail_orphan, forget_before_claim,
                      forget_unsent, settle)
from .transitions import (claim_carried, claim_job, count_deleted_run,  # noqa: F401
                          insert_response, store_result)
