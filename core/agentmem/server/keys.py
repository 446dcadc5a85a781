"""API keys of the server: create, list, revoke, and check a presented key.

A key looks like ``amk_<id>_<secret>``: ``id`` (12 hex characters) names the row, ``secret``
is 256 random bits. Only ``sha256(secret)`` is stored; the key itself is shown once, when it is
created. A 256-bit random secret needs no salt or slow hash (there is no dictionary to try),
and the stored hash is compared with :func:`hmac.compare_digest` (constant time).

A key belongs to one tenant and may be pinned to a user and/or an agent: requests made with it
act for that tenant only, and for the pinned user/agent only. An ``admin`` key also reads its
tenant's maintenance reports (stats, doctor: nothing of another tenant, no server path),
exports the tenant and erases in it. An ``operator`` key (the server's operator, e.g. its
monitoring) also reads the server-wide views that belong to no tenant (the whole store's
stats and doctor report, ``GET /metrics``); it too reaches only its own tenant's data.

The functions take the :class:`~agentmem.storage.records.RecordStore`; the server checks keys
against the table on every request, so keys created or revoked by ``agentmem keys`` (another
process) take effect at once, without a restart.

Example:
    >>> created = create_key(records, tenant_id="acme", user_id="u1")  # doctest: +SKIP
    >>> authenticate(records, created.key).tenant_id  # doctest: +SKIP
    'acme'
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from .. import validation
from ..errors import AuthError, NotFoundError, ValidationError
from ..key_identity import resolve_identity as resolve_identity  # re-exported: it lived here
from ..results import ApiKey as ApiKey  # re-exported: it lived here
from ..storage.keys import KeyRow
from ..storage.records import RecordStore

PREFIX = "amk_"
_ID = re.compile(r"^[0-9a-f]{12}$")
#: Compared against when the key id is unknown, so a miss costs what a hit costs.
_DUMMY_HASH = hashlib.sha256(b"agentmem-no-such-key").hexdigest()


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key: ``key`` is the secret to hand to the client (shown only this once)."""

    key: str
    api_key: ApiKey


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _public(row: KeyRow) -> ApiKey:
    return ApiKey(
        id=row.id,
        tenant_id=row.tenant_id,
        user_id=row.user_id,
        agent_id=row.agent_id,
        name=row.name,
        admin=row.admin,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        operator=row.operator,
    )


def create_key(
    records: RecordStore,
    *,
    tenant_id: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    name: str | None = None,
    admin: bool = False,
    operator: bool = False,
) -> CreatedKey:
    """Create a key for ``tenant_id`` (optionally pinned to a user and/or agent).

    Raises:
        ValidationError: an identity or the name is malformed, or an admin or operator key
            is pinned.
    """
    tenant = validation.identity(tenant_id, "tenant_id", required=True)
    assert tenant is not None
    user = validation.identity(user_id, "user_id")
    agent = validation.identity(agent_id, "agent_id")
    label = validation.identity(name, "name")
    for field, flag in (("admin", admin), ("operator", operator)):
        if not isinstance(flag, bool):
            raise ValidationError(field, f"must be a bool, got {type(flag).__name__}")
    if admin and (user is not None or agent is not None):
        raise ValidationError(
            "admin",
            "an admin key exports and inspects its whole tenant, so it cannot be pinned to a "
            "user or agent; create a separate admin key",
        )
    if operator and (user is not None or agent is not None):
        raise ValidationError(
            "operator",
            "an operator key reads server-wide views, so it cannot be pinned to a user or "
            "agent; create a separate operator key",
        )
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    row = records.api_keys.insert(
        key_id,
        _hash(secret),
        tenant_id=tenant,
        user_id=user,
        agent_id=agent,
        name=label,
        admin=admin,
        operator=operator,
    )
    return CreatedKey(key=f"{PREFIX}{key_id}_{secret}", api_key=_public(row))


def list_keys(records: RecordStore, *, tenant_id: str | None = None) -> list[ApiKey]:
    """Every key (of ``tenant_id``), oldest first, revoked ones included."""
    tenant = validation.identity(tenant_id, "tenant_id")
    return [_public(r) for r in records.api_keys.list(tenant_id=tenant)]


def revoke_key(records: RecordStore, key_id: str) -> ApiKey:
    """Revoke a key; requests made with it fail from now on (also on a running server).

    Raises:
        NotFoundError: no key has that id.
    """
    ref = validation.identity(key_id, "key_id", required=True)
    assert ref is not None
    records.api_keys.revoke(ref)
    row = records.api_keys.get(ref)
    if row is None:
        raise NotFoundError(f"no API key with id {ref!r}", key_id=ref)
    return _public(row)


def key_id_of(token: str) -> str | None:
    """The id part of a presented key, or None when it is not shaped like one of ours."""
    if not token.startswith(PREFIX):
        return None
    key_id, sep, secret = token[len(PREFIX) :].partition("_")
    if not sep or not secret or not _ID.match(key_id):
        return None
    return key_id


def authenticate(records: RecordStore, token: str | None) -> ApiKey:
    """The live key ``token`` presents.

    Raises:
        AuthError: no key (``reason="missing"``), not a key of this server (``invalid``), or
            a revoked one (``revoked``). The message never repeats the token.
    """
    if not token:
        raise AuthError(
            "an API key is required: send 'Authorization: Bearer <key>' (create one with "
            "`agentmem keys create --tenant T`)",
            reason="missing",
        )
    key_id = key_id_of(token)
    row = records.api_keys.get(key_id) if key_id is not None else None
    presented = _hash(token[len(PREFIX) + 13 :]) if key_id is not None else _hash(token)
    if not hmac.compare_digest(row.secret_hash if row else _DUMMY_HASH, presented) or row is None:
        raise AuthError("invalid API key", reason="invalid")
    if row.revoked_at is not None:
        raise AuthError(f"API key {row.id} was revoked", reason="revoked", key_id=row.id)
    return _public(row)


__all__ = [
    "PREFIX",
    "ApiKey",
    "CreatedKey",
    "authenticate",
    "create_key",
    "key_id_of",
    "list_keys",
    "resolve_identity",
    "revoke_key",
]
