"""The WebSocket front door of /v1/responses. Not built yet: every handshake is refused
(HTTP 403), never a 500.

A WebSocket consumer (a Channels consumer, routed in gateway/asgi.py) takes its frames
through the same steps as the HTTP views in stream_views.py: streaming.create (API key,
admission, validation, the row and the run, the subscription), streaming.follow and
streaming.cancel_abandoned, and the subscription's entries as relay.py reads them.
"""


async def refuse_websocket(scope, receive, send):
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})
