"""Configuration: the settings model, the layered files it is read from, and workspace trust
(which of a workspace's own settings wait until the user trusts it)."""
