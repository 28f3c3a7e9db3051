"""The translator of a run that may compact first (server-side compaction): the response's
state machine, plus a `compaction` output item in OpenAI's events: `output_item.added`
(its `encrypted_content` still empty), `response.compaction.compacting` while the summary
is written, then `output_item.done` with the sealed summary. Pure, as the state machine."""
from .state_machine import ResponseTranslator


class CompactingTranslator(ResponseTranslator):
    def open_compaction(self) -> tuple[list[dict], dict]:
        """A `compaction` item whose summary is being written."""
        item = {"id": self.options.ids("cmp"), "type": "compaction", "encrypted_content": ""}
        events: list[dict] = []
        index = self._add_item(events, item, dict(item))
        events.append({"type": "response.compaction.compacting", "item_id": item["id"],
                       "output_index": index})
        return events, item

    def compaction_done(self, item: dict, sealed: str, chat_usage: dict | None) -> list[dict]:
        """The item done with its sealed summary; the summary call's tokens count in the
        response's usage."""
        item["encrypted_content"] = sealed
        self._usages.add_call(chat_usage)
        return [{"type": "response.output_item.done",
                 "output_index": self.response["output"].index(item), "item": item}]

    def count_call(self, chat_usage: dict | None) -> None:
        """A summary call that wrote no summary (cut, or with no content), with its usage
        if it spent any: counted in the response's usage all the same."""
        self._usages.add_call(chat_usage)
