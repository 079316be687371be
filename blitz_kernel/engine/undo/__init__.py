"""Undo: the recorder that keeps what a turn changes (files, cells, variables) as it runs, and
the undo that puts it back."""
