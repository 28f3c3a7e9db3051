"""A steered, cancelled, failed or crashed run's end: the upstream call cut mid-stream
(CutTurn: by the steer or the cancel, by the upstream itself, whose stream broke, timed out
or sent a malformed chunk after it answered, or by the run's own bug) is counted when the
upstream reported no usage for it (context.cut_usage: why), so such a response's usage is,
as any other's, the tokens of every upstream call of its run. A compaction's summary call
cut the same way is counted by the same rules (summary_call.py), once: a summary that
completed was counted then. A count that fails is logged, and the run ends as it would
have, without that call's tokens."""
import logging
from dataclasses import dataclass

from ..context.cut_usage import cut_usage
from .loop import blocking
from .summary_call import spent_usage

log = logging.getLogger(__name__)


@dataclass
class CutTurn:
    """The upstream call in progress, once the upstream answered it (a call still waiting
    for a slot, a retry or its answer was not made, or was refused: nothing to count): its
    chat request, its first output item."""
    body: dict
    first_item: int


async def close_cut_turn(streaming) -> list[dict]:
    """Close what the run left open; count its cut call if the upstream reported no usage.
    The closing events (the response's end, `finish`, follows them)."""
    translator, turn, summary = streaming.translator, streaming.turn, streaming.summary
    if summary is not None:  # cut while the compaction's summary was written
        streaming.summary = None
        try:
            translator.count_call(await blocking(spent_usage, streaming.route, summary))
        except Exception:
            log.exception("run %s: its cut summary call could not be counted",
                          streaming.job.id)
    events, usage_missing = translator.close_cut_turn()
    if turn is not None and usage_missing:
        generated = translator.response["output"][turn.first_item:]
        try:
            translator.count_cut_turn(await blocking(cut_usage, streaming.route, turn.body,
                                                     generated))
        except Exception:
            log.exception("run %s: its cut upstream call could not be counted",
                          streaming.job.id)
    return events
