"""Safety: approvals, hooks, risky-code screening and the audit trail: what decides whether a
tool call may run and what records that it did."""
