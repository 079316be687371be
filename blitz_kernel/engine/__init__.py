"""The agent engine. Never imports IPython, widgets or litellm (ARCHITECTURE.md)."""
