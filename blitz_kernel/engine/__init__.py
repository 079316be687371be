"""The agent engine. Never imports IPython, widgets or litellm (docs/architecture.md)."""
