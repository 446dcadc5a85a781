"""What the server and the client share: the operation table, the JSON codec of the result
types, and the mapping of agentmem errors to HTTP statuses and back.

Nothing here imports the server's web framework, so the client needs only ``httpx``.
"""

from __future__ import annotations

from .codec import decode, encode
from .errors import error_body, error_from, status_of
from .ops import OPS, Op

__all__ = ["OPS", "Op", "decode", "encode", "error_body", "error_from", "status_of"]
