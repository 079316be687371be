"""Value types every layer shares: a session's history (messages and parts) and token usage
with prices. Pure data, no behaviour beyond validation and arithmetic, so models, tools, the
engine and the front end can all import them without importing each other (docs/architecture.md)."""
