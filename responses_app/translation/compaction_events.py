"""The translator of a run that may compact first (server-side compaction): the response's
state machine, plus a `compaction` output item in OpenAI's events: `output_item.added`
(its `encrypted_content` still empty), `response.compaction.compacting` while the summary
is written, then `output_item.done` with the sealed summary. A response that ends before
the summary was written (cancelled, steered, failed, crashed) closes the item as it closes
every open item, before its end: its `output_item.done` carries the token of an unfinished
compaction (context.compaction_items.unfinished_compaction, given when the item opens), which
stands for nothing, so a continuation sends its history as if it never began. Pure, as
the state machine."""
from .state_machine import ResponseTranslator


class CompactingTranslator(ResponseTranslator):
    _compaction: tuple[dict, str] | None = None  # the open item, its token if it is cut

    def open_compaction(self, unfinished: str) -> tuple[list[dict], dict]:
        """A `compaction` item whose summary is being written (`unfinished`: the token it
        is closed with if the response ends first)."""
        item = {"id": self.options.ids("cmp"), "type": "compaction", "encrypted_content": ""}
        events: list[dict] = []
        index = self._add_item(events, item, dict(item))
        events.append({"type": "response.compaction.compacting", "item_id": item["id"],
                       "output_index": index})
        self._compaction = item, unfinished
        return events, item

    def compaction_done(self, item: dict, sealed: str) -> list[dict]:
        """The item done with its sealed summary (its call counted already: count_call)."""
        self._compaction = None
        item["encrypted_content"] = sealed
        return [self._compaction_closed(item)]

    def count_call(self, chat_usage: dict | None) -> None:
        """A summary call that ended (completed, cut, or with no content), with its usage if
        it spent any: counted in the response's usage, whatever becomes of its summary."""
        self._usages.add_call(chat_usage)

    def _close_all(self, status) -> list[dict]:
        """What is open closed; an open compaction first (it comes before any turn's items),
        as unfinished."""
        if self._compaction is None:
            return super()._close_all(status)
        (item, unfinished), self._compaction = self._compaction, None
        item["encrypted_content"] = unfinished
        return [self._compaction_closed(item), *super()._close_all(status)]

    def _compaction_closed(self, item: dict) -> dict:
        return {"type": "response.output_item.done",
                "output_index": self.response["output"].index(item), "item": item}
