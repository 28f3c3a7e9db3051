"""The streams of a WebSocket (`stream_id`, OpenAI's multiplexing): each stream runs its
`response.create` frames one after another, in the order they came (FIFO); streams run at
the same time. Frames without `stream_id` make the socket's default stream."""
import asyncio
from collections import deque

from django.conf import settings

from .socket_turn import Turn


class Lane:
    """One stream of a socket: its running response and the frames waiting behind it."""

    def __init__(self, socket, stream_id: str | None):
        self.socket, self.stream_id = socket, stream_id
        self.queue: deque = deque()
        self.worker: asyncio.Future | None = None
        self.turn: Turn | None = None

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
        """Run this frame's response, then the queued ones, one after another."""
        socket = self.socket
        while frame is not None and not socket.closing:
            self.turn = Turn(socket, socket.state, frame, self.stream_id)
            try:
                await self.turn.run()  # its errors are its client's error frames
            finally:
                self.turn = None
                socket.last_active = asyncio.get_running_loop().time()
            frame = self.queue.popleft() if self.queue else None

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
