"""``agentmem keys create|list|revoke``: the API keys of ``agentmem serve``.

These commands open only the records store of the data dir (not its indexes and not its
writer lock), so they work on a data dir a running server holds: the server checks keys
against the records on every request and sees a new or revoked key at once.

Examples::

    agentmem --home /srv/mem keys create --tenant acme --name web-app
    agentmem --home /srv/mem keys create --tenant acme --user u1 --json
    agentmem --home /srv/mem keys create --tenant acme --admin --name ops
    agentmem --home /srv/mem keys create --tenant ops --operator --name prometheus
    agentmem --home /srv/mem keys list
    agentmem --home /srv/mem keys revoke 3f9a0c1d2b4e
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.table import Table

from ..config import Settings, default_home
from ..context import records_url
from ..server.keys import ApiKey, create_key, list_keys, revoke_key
from ..storage.datadir import RECORDS_FILE
from ..storage.records import RecordStore
from ._common import (
    EXIT_OK,
    Output,
    command,
    home_of,
    markup,
    records_url_of,
    refuse_missing_home,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "keys",
        help="create, list and revoke the API keys of `agentmem serve`",
        description="API keys of the server. A key belongs to one tenant and may be pinned to "
        "a user and/or an agent; it is stored hashed and printed only when it is created. "
        "Works while a server runs on the data dir (it sees changes at once).",
    )
    keys = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)

    c = keys.add_parser("create", help="create a key and print it (once)")
    c.add_argument("--tenant", dest="key_tenant", default=None, help="the key's tenant")
    c.add_argument("--user", dest="key_user", default=None, help="pin the key to this user")
    c.add_argument("--agent", dest="key_agent", default=None, help="pin the key to this agent")
    c.add_argument("--name", default=None, help="a label for people (e.g. the app using it)")
    c.add_argument(
        "--admin",
        action="store_true",
        help="the key may also read its tenant's stats and doctor report, export the tenant "
        "and erase in it",
    )
    c.add_argument(
        "--operator",
        action="store_true",
        help="the key may also read the server-wide views: the whole store's stats and "
        "doctor report, the metrics (GET /metrics)",
    )
    c.add_argument("--json", dest="key_json", action="store_true", help="JSON output")
    c.set_defaults(func=cmd_create)

    ls = keys.add_parser("list", help="list keys (never their secrets)")
    ls.add_argument("--tenant", dest="key_tenant", default=None, help="only this tenant's keys")
    ls.add_argument("--json", dest="key_json", action="store_true", help="JSON output")
    ls.set_defaults(func=cmd_list)

    r = keys.add_parser("revoke", help="revoke a key by id (a running server refuses it at once)")
    r.add_argument("key_id", metavar="ID")
    r.add_argument("--json", dest="key_json", action="store_true", help="JSON output")
    r.set_defaults(func=cmd_revoke)


@contextmanager
def open_records(args: argparse.Namespace, *, create: bool = False) -> Iterator[RecordStore]:
    """The records store of ``--home`` alone (no lock, no indexes), closed afterwards; a
    missing data dir is made only with ``create`` (a key made before the first serve)."""
    home = home_of(args) or default_home()
    url = records_url(Settings.from_env().replace(records_url=records_url_of(args)))
    if not create:
        refuse_missing_home(home, url)
    home.mkdir(parents=True, exist_ok=True)
    records = RecordStore(home / RECORDS_FILE, url=url)
    try:
        yield records
    finally:
        records.close()


def _merge(args: argparse.Namespace) -> argparse.Namespace:
    """Flags given after ``keys ...`` win over the same global flags given before it."""
    merged = argparse.Namespace(**vars(args))
    merged.json = bool(getattr(args, "json", False) or getattr(args, "key_json", False))
    for name in ("tenant", "user", "agent"):
        value = getattr(args, f"key_{name}", None)
        if value is not None:
            setattr(merged, name, value)
    return merged


def _json(key: ApiKey) -> dict[str, Any]:
    """A key for ``--json``, its fields named like the flags that set them."""
    return {
        "id": key.id,
        "tenant": key.tenant_id,
        "user": key.user_id,
        "agent": key.agent_id,
        "name": key.name,
        "admin": key.admin,
        "operator": key.operator,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }


def _pins(key: ApiKey) -> str:
    parts = [
        f"user {key.user_id}" if key.user_id else "",
        f"agent {key.agent_id}" if key.agent_id else "",
    ]
    return ", ".join(p for p in parts if p) or "any user/agent"


@command
def cmd_create(args: argparse.Namespace) -> int:
    args = _merge(args)
    out = Output.from_args(args)
    with open_records(args, create=True) as records:
        created = create_key(
            records,
            tenant_id=args.tenant,
            user_id=args.user,
            agent_id=args.agent,
            name=args.name,
            admin=bool(args.admin),
            operator=bool(args.operator),
        )
    key = created.api_key
    out.result(
        {"key": created.key, **_json(key)},
        text=f"{created.key}\n"
        f"[dim]id {key.id}, tenant {markup(key.tenant_id)}, {markup(_pins(key))}"
        f"{', admin' if key.admin else ''}{', operator' if key.operator else ''}. "
        "Store the key now: it is not shown again.[/dim]",
    )
    return EXIT_OK


@command
def cmd_list(args: argparse.Namespace) -> int:
    args = _merge(args)
    out = Output.from_args(args)
    tenant = getattr(args, "key_tenant", None)
    with open_records(args) as records:
        found = list_keys(records, tenant_id=tenant)
    if out.json:
        out.result({"keys": [_json(k) for k in found]})
        return EXIT_OK
    table = Table(title="agentmem API keys", title_justify="left")
    table.add_column("id", no_wrap=True)
    for column in ("tenant", "pinned to", "name", "admin", "operator", "created", "revoked"):
        table.add_column(column)
    for key in found:
        table.add_row(
            key.id,
            markup(key.tenant_id),
            markup(_pins(key)),
            markup(key.name or ""),
            "yes" if key.admin else "",
            "yes" if key.operator else "",
            key.created_at.strftime("%Y-%m-%d %H:%M"),
            key.revoked_at.strftime("%Y-%m-%d %H:%M") if key.revoked_at else "",
        )
    out.print(table)
    return EXIT_OK


@command
def cmd_revoke(args: argparse.Namespace) -> int:
    args = _merge(args)
    out = Output.from_args(args)
    with open_records(args) as records:
        key = revoke_key(records, args.key_id)
    out.result(_json(key), text=f"revoked API key {key.id} (tenant {markup(key.tenant_id)})")
    return EXIT_OK
