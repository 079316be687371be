"""Helpers shared by every test tier: the tier marking of each tier's conftest, one factory for
workspaces that see nothing of the machine, and the assertions on what a provider was sent."""
