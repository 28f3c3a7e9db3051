"""The streams of a WebSocket (`stream_id`, OpenAI's multiplexing): each stream runs its
`response.create` frames one after another, in the order they came (FIFO); streams run at
the same time. Frames without `stream_id` make the socket's default stream. A stream also
runs the automatic successor of a steered response (socket_steer.py) right after it, before
the frames waiting behind it: the steered response ended `incomplete` (`steered`) or
completed, with the steered messages as its input."""
import asyncio
from collections import deque

from django.conf import settings

from .socket_steer import (SteerRefused, carried_frame, required_input, successor_frame,
                           unsteerable)
from .socket_turn import USABLE_STATUSES, Turn


class Lane:
    """One stream of a socket: its running response and the frames waiting behind it."""

    def __init__(self, socket, stream_id: str | None):
        self.socket, self.stream_id = socket, stream_id
        self.queue: deque = deque()
        self.worker: asyncio.Future | None = None
        self.turn: Turn | None = None
        # Accepted steers waiting for the client's tool output: (the response they steer,
        # the steers), carried into the next response.create continuing that response.
        self.pending: tuple[str, list] | None = None

    @property
    def busy(self) -> bool:
        return self.worker is not None and not self.worker.done()

    def offer(self, frame: dict) -> bool:
        """Run `frame` now or after the stream's running response; False if too many wait."""
        if not self.busy:
            self.worker = asyncio.ensure_future(self._work(frame))
        elif len(self.queue) < settings.WEBSOCKET_MAX_QUEUED:
            self.queue.append(frame)
        else:
            return False
        return True

    async def _work(self, frame: dict | None) -> None:
        """Run this frame's response, then its successor or the queued ones, in order."""
        socket, carried = self.socket, []
        while frame is not None and not socket.closing:
            if not carried:
                frame, carried = await self._carry(frame)
            self.turn = turn = Turn(socket, socket.state, frame, self.stream_id)
            turn.carried = carried
            try:
                await turn.run()  # its errors are its client's error frames
            finally:
                self.turn = None
                socket.last_active = asyncio.get_running_loop().time()
            frame, carried = await self._settle(turn)
            if frame is None and self.queue:
                frame = self.queue.popleft()

    async def _carry(self, frame: dict) -> tuple[dict, list]:
        """Pending steers go into the create that continues their response; any other
        create on this stream means they will not be committed."""
        if self.pending is None:
            return frame, []
        (parent, steers), self.pending = self.pending, None
        if frame.get("previous_response_id") == parent:
            return carried_frame(frame, steers), steers
        await self._lose(steers, "response_not_active", "The response was not continued: "
                         "another response.create ran on its stream.")
        return frame, []

    async def _settle(self, turn: Turn) -> tuple[dict | None, list]:
        """After a response: what became of the steers it carried and took; its automatic
        successor (frame, steers), if it has one."""
        if turn.carried and not turn.started:
            await self._lose(turn.carried, "successor_creation_failed",
                             "The response continuing the steered one could not be created.")
        steers, final = turn.steers, turn.final
        if not steers or self.socket.closing:
            return None, []
        if final is None or final["status"] not in USABLE_STATUSES:
            await self._lose(steers, "response_not_active", "The steered response ended "
                             "without completing; its steering input was not applied.")
            return None, []
        stubs = required_input(final)
        if stubs:
            for steer in steers:
                await self.socket.send_text(
                    self.socket.steer_events.pending(steer, stubs, self.stream_id))
            self.pending = (final["id"], steers)
            return None, []
        return successor_frame(turn.frame, final["id"], steers), steers

    async def _lose(self, steers: list, code: str, message: str) -> None:
        for steer in steers:
            await self.socket.send_text(
                self.socket.steer_events.lost(steer, code, message, self.stream_id))

    async def stop(self) -> None:
        """The socket closed: drop the waiting frames, stop the running response if it is
        not stored (nobody can read the rest); a stored one goes on in its worker."""
        self.queue.clear()
        turn = self.turn
        if self.worker is not None and not self.worker.done():
            self.worker.cancel()
        stopping = turn.cancel_if_unstored() if turn is not None else None
        if stopping is not None:
            await stopping


def steered_lane(lanes: dict, state, target: str) -> Lane:
    """The stream whose running response is `target`, open to steering; else SteerRefused."""
    for lane in lanes.values():
        turn = lane.turn
        if turn is not None and turn.job is not None and turn.job.id == target:
            refused = unsteerable(turn.frame)
            if refused is not None:
                raise refused
            if turn.steerable:
                return lane
            raise SteerRefused("response_already_completed", _ENDED)
        if lane.pending is not None and lane.pending[0] == target:
            raise SteerRefused("response_already_completed", _ENDED)
    if any(last.id == target for last in state.last.values()):
        raise SteerRefused("response_already_completed", _ENDED)
    raise SteerRefused("response_not_found", f"No response with id '{target}' is running on "
                       "this connection.")


_ENDED = "The response completed and is no longer accepting steering input."
