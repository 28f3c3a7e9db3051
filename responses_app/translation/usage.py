"""Chat Completions `usage` → Responses `usage` (reasoning and cached tokens included)."""


def usage_from_chat(usage: dict | None) -> dict | None:
    if not usage:
        return None
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": prompt_details.get("cached_tokens") or 0,
            "cache_write_tokens": 0,
        },
        "output_tokens": completion,
        "output_tokens_details": {
            "reasoning_tokens": completion_details.get("reasoning_tokens") or 0
        },
        "total_tokens": prompt + completion,
    }


def sum_chat_usage(usages: list[dict]) -> dict | None:
    """The Chat Completions usage of several upstream turns of one response, added up."""
    if not usages:
        return None
    if len(usages) == 1:
        return usages[0]

    def total(key, detail=None):
        values = (u.get(key) or 0 if detail is None else (u.get(key) or {}).get(detail) or 0
                  for u in usages)
        return sum(values)

    return {
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "prompt_tokens_details": {"cached_tokens": total("prompt_tokens_details", "cached_tokens")},
        "completion_tokens_details": {
            "reasoning_tokens": total("completion_tokens_details", "reasoning_tokens")},
    }
