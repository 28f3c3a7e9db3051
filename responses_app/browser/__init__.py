"""The admin's response browser: the list, a response's chain as a conversation, its stored
event stream, and a tenant's usage. Reads only; the admin views live in `views`."""
