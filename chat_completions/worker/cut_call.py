"""A chat run that ends without its completion (its upstream failed mid-stream or refused a
later turn, or the client of a `store: false` run left) is charged, as a failed or
cancelled response is, the tokens of every upstream call it made: the turns' reported
usage, and the call it cut (ChatCutCall: its client left, or the upstream's stream broke,
timed out or turned malformed after it answered), which reported none (Chat Completions
reports usage in its last chunk), counted as a Responses run counts one
(responses_app.context.cut_usage: the route's counter on the request sent and on the text
generated). A call the upstream never answered (refused, or still waiting for a slot or
a retry) is not counted. Uncharged, every failed or abandoned chat completion was free.
A crashed run (the gateway's own bug) is charged so too. A run is charged once (not again
if its completion's store committed its usage before it crashed); a count or a commit that
fails is logged, and the run ends as it would have, uncharged for what failed."""
import logging
from dataclasses import dataclass

from responses_app.context.cut_usage import counted_usage
from responses_app.worker.loop import blocking

from .completion import Completion
from .store import record_usage

log = logging.getLogger(__name__)


@dataclass
class ChatCutCall:
    """The upstream call in progress, once the upstream answered it: its chat request, and
    the length of each choice's texts when it began (what follows, it generated)."""
    body: dict
    texts_before: dict  # (choice index, text field) -> length

    @classmethod
    def began(cls, body: dict, completion: Completion) -> "ChatCutCall":
        return cls(body, {(choice.index, name): len(text)
                          for choice in completion.choices.values()
                          for name, text in choice.texts.items()})

    def generated(self, completion: Completion) -> str:
        """What the model generated in this call: text, and its tool calls' arguments."""
        parts = []
        for choice in sorted(completion.choices.values(), key=lambda c: c.index):
            parts += [text[self.texts_before.get((choice.index, name), 0):]
                      for name, text in choice.texts.items()]
            parts += [call["function"]["arguments"] for call in choice.tool_calls()]
        return "".join(parts)


async def charge(run, status: str) -> None:
    """Count the call `run` cut, if the upstream reported no usage for it, and record the
    usage of the run (`status`: failed or cancelled), if it used any and was not charged
    yet (`run.charged`); `run.used_tokens` is what its admission is settled with."""
    if run.charged:
        return
    run.charged = True
    completion, cut = run.completion, run.cut
    try:
        if cut is not None and not completion.turn_reported:
            completion.count_cut_turn(await blocking(counted_usage, run.route, cut.body,
                                                     cut.generated(completion)))
    except Exception:
        log.exception("chat run %s: its cut upstream call could not be counted", run.job.id)
    completion.end_turn()
    if completion.usage:
        try:
            run.used_tokens = await blocking(record_usage, run.job, completion.usage, status)
        except Exception:
            log.exception("chat run %s: its usage could not be recorded", run.job.id)
