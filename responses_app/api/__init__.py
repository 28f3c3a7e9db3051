"""The front door of the Responses API: the HTTP views (DRF, and the async streaming views
with their thin ASGI front), what every front door does to start or follow a response
(streaming.py), the SSE relay, request parsing and error middleware, and the URL routes.
Nothing here is imported by the services below it or by the worker."""
