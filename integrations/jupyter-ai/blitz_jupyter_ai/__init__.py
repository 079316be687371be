"""The Blitz persona for Jupyter AI 3 (docs/outside-clients.md)."""
