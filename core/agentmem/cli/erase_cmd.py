"""``agentmem --home DIR erase --tenant T [--user U] [--agent A] [--json]``.

Erases a whole tenant (``--tenant`` alone) or everything one user and/or agent owns in it,
from every store of the data dir (see :mod:`agentmem.maintenance.erase`), and prints the
receipt: rows removed per records table, keyword entries, vectors and collections, and which
stores' files were compacted. Irreversible.

The identity comes from the flags only (never from ``AGENTMEM_TENANT`` and the other
variables: an erasure names what it erases; a whole-tenant erasure is refused while
``AGENTMEM_USER`` or ``AGENTMEM_AGENT`` is set). The data dir must not be open in another
process (a server erases through its own admin endpoint).

Exit statuses: 0 erased (also when there was nothing to erase); 1 the data dir is busy or a
store failed (the erasure is finished at the next open, or by running the command again);
2 bad input (no ``--tenant``, an empty or invalid id).
"""

from __future__ import annotations

import argparse
import os

from .. import validation
from ..errors import ValidationError
from ..models import ErasureReceipt
from ._common import (
    EXIT_OK,
    IDENTITY_ENV,
    CliError,
    Output,
    command,
    markup,
    open_memory,
    to_jsonable,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "erase",
        help="erase a tenant, or a user/agent of it, from every store (irreversible)",
        description="Erase every record, derived row, payload, session, working and agent "
        "state of a tenant (--tenant alone), or of one user and/or agent of it, from the "
        "records, both indexes and the files they keep deleted data in. Prints what was "
        "removed per store. Irreversible; running it again removes nothing more.",
    )
    # SUPPRESS: the global flags given before the command count as well
    p.add_argument("--tenant", default=argparse.SUPPRESS, help="the tenant (required)")
    p.add_argument("--user", default=argparse.SUPPRESS, help="erase this user of the tenant")
    p.add_argument("--agent", default=argparse.SUPPRESS, help="erase this agent of the tenant")
    p.set_defaults(func=cmd_erase)


def _flag(args: argparse.Namespace, name: str, *, required: bool = False) -> str | None:
    try:
        return validation.identity(getattr(args, name, None), f"--{name}", required=required)
    except ValidationError as exc:
        raise CliError(str(exc)) from exc


def erase_identity(args: argparse.Namespace) -> tuple[str, str | None, str | None]:
    """(tenant, user, agent) of the command line; the flags only."""
    if getattr(args, "tenant", None) is None:
        raise CliError("erase needs --tenant (identity variables are not read for an erasure)")
    tenant = _flag(args, "tenant", required=True)
    assert tenant is not None
    user, agent = _flag(args, "user"), _flag(args, "agent")
    if user is None and agent is None:
        # Every other command binds AGENTMEM_USER / AGENTMEM_AGENT; an erasure does not read
        # them, so with one set, `erase --tenant T` would erase the whole tenant where the
        # caller most likely meant the identity they work as. Irreversible: ask, don't guess.
        named = [
            f"{IDENTITY_ENV[n]}={os.environ[IDENTITY_ENV[n]]!r}"
            for n in ("user", "agent")
            if os.environ.get(IDENTITY_ENV[n], "").strip()
        ]
        if named:
            raise CliError(
                f"erase --tenant {tenant} alone erases the whole tenant, and {' and '.join(named)} "
                "is set but not read for an erasure: pass --user / --agent to erase that "
                "identity, or unset the variable to erase the whole tenant"
            )
    return tenant, user, agent


@command
def cmd_erase(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    tenant, user, agent = erase_identity(args)
    with open_memory(args, create=False, background=False) as mem:
        receipt = mem.erase(tenant_id=tenant, user_id=user, agent_id=agent)
    out.result(to_jsonable(receipt), text=describe_receipt(receipt))
    return EXIT_OK


def describe_receipt(r: ErasureReceipt) -> str:
    """An erasure receipt for people."""
    who = f"tenant {r.tenant_id!r}"
    if r.user_id is not None:
        who += f", user {r.user_id!r}"
    if r.agent_id is not None:
        who += f", agent {r.agent_id!r}"
    lines = [f"erased {markup(who)} ({r.erasure_id}{', resumed' if r.resumed else ''})"]
    tables = ", ".join(f"{t} {n}" for t, n in r.records.items()) or "nothing"
    lines.append(f"  records: {r.rows} row(s) removed: {markup(tables)}")
    lines.append(f"  keyword index: {r.keyword_entries} entries removed")
    lines.append(
        f"  vector index: {r.vectors} vector(s) removed; {r.collections_dropped} collection(s) "
        f"dropped, {r.collections_rebuilt} rebuilt"
    )
    if r.sessions_rebuilt:
        lines.append(f"  sessions shared with others rebuilt: {r.sessions_rebuilt}")
    lines.append(f"  files compacted: {', '.join(r.compacted) or 'none'}")
    return "\n".join(lines)
