"""Long sessions: what the upstream receives of a long history (compaction items, the
context window, truncation), token counts, and the compaction endpoint's work."""
