"""The turn: run options and modes, the setup resolved once per turn, the loop (model → tools →
model), tool batches, steering, compaction, limits, the watchdog and sub-agents."""
