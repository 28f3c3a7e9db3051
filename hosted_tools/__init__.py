"""Hosted tools (`web_search`, `file_search`) run by the gateway over any Chat Completions
model, and the outcome of every other hosted tool type of OpenAI's schema."""
