"""The columns units may be sorted by, apart from the store: the CLI offers
them as choices without loading DuckDB."""

# Columns a caller may sort by, mapped to the SQL that sorts them.
ORDER_COLUMNS = {
    "occurred_start": "u.occurred_start",
    "occurred": "u.occurred_start",
    "mentioned_at": "u.mentioned_at",
    "created_at": "u.created_at",
    "updated_at": "u.updated_at",
    "confidence": "u.confidence",
    "text": "lower(u.text)",
    "network": "u.network",
    "access_count": "u.access_count",
    "last_accessed_at": "u.last_accessed_at",
}
