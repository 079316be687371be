"""Persistence: the in-memory session and its history, the store protocol and its backends, the
per-session lock, resume notes and checkpoint records. The one place for state."""
