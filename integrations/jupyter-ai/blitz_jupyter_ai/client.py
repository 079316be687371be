"""The Blitz persona's ACP client: Jupyter AI's own, plus one thing blitz needs (docs/acp.md).

blitz asks a permission in the chat and, when the notebook's blitz front end is connected, in
the notebook too; the first answer wins. ACP cannot withdraw a `session/request_permission`, so
when the notebook answers first the chat would keep showing its buttons. The call's next status
update (it runs, or failed) tells the client the request was answered elsewhere: the chat's
request is closed then, answered "cancelled", which blitz ignores for a settled request (and which
would be a denial for one that is not).
"""

from __future__ import annotations

from typing import Any

from acp.schema import ToolCallProgress
from jupyter_ai_acp_client.default_acp_client import JaiAcpClient

ANSWERED = ("in_progress", "completed", "failed")
"""A tool call in one of these states is no longer waiting for its permission."""


class BlitzAcpClient(JaiAcpClient):
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        if isinstance(update, ToolCallProgress) and update.status in ANSWERED:
            self._answered_elsewhere(session_id, update.tool_call_id)

    def _answered_elsewhere(self, session_id: str, tool_call_id: str) -> None:
        pending = self._permission_manager._pending.get((session_id, tool_call_id))
        if pending is not None and not pending.future.done():
            pending.future.set_result(None)  # the chat's card shows the request as resolved
