"""The audit log: one row per change a user may ask about later (a supersession, a deletion,
a forgetting, an anonymization), written in the transaction of the change itself."""

from __future__ import annotations

import json
from typing import Any

from .database import Transaction


def audit(
    tx: Transaction, at: str | None, event: str, tenant: str, memory_id: str, **d: Any
) -> None:
    """Append an ``event`` about ``memory_id`` with ``d`` as its JSON detail, inside ``tx``."""
    tx.execute(
        "INSERT INTO audit_log (at, event, tenant_id, memory_id, detail) VALUES (?,?,?,?,?)",
        (at, event, tenant, memory_id, json.dumps(d)),
    )
