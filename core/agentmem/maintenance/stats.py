"""``agentmem stats``: row counts, index backlog, the recorded embedder and disk use."""

from __future__ import annotations

from typing import Any

from ..context import StoreContext
from ..models import KINDS
from ..results import Stats as Stats  # re-exported: it lived here
from ..storage import fingerprint
from ..storage.datadir import KEYWORDS_DIR, RECORDS_FILE, VECTORS_DIR, dir_size


def stats(ctx: StoreContext, *, tenant_id: str | None = None) -> Stats:
    """Counts of the whole data dir (every tenant), or of one tenant's rows (its admin's view
    on a server: nothing of other tenants, no disk use of the shared files)."""
    ctx.check_open()
    counts = ctx.records.archive.counts(KINDS, tenant_id)
    kw, vec, failed = ctx.records.index.pending_counts(tenant_id)
    recorded = fingerprint.read(ctx.records)
    files = {"records": RECORDS_FILE, "keywords": KEYWORDS_DIR, "vectors": VECTORS_DIR}
    shared = tenant_id is not None  # the files hold every tenant: not a tenant's figure
    return Stats(
        live=counts.live,
        deleted=counts.deleted,
        superseded=counts.superseded,
        keyword_pending=kw,
        vector_pending=vec,
        vector_failed=failed,
        by_kind=counts.by_kind,
        tenants=counts.tenants,
        disk_bytes={} if shared else {name: dir_size(ctx.home / f) for name, f in files.items()},
        embedder=None if recorded is None else recorded.to_dict(),
        calibration=_calibration(ctx),
    )


def _calibration(ctx: StoreContext) -> dict[str, Any]:
    profile = ctx.calibration.profile
    return {
        "source": ctx.calibration.source,
        "model_name": None if profile is None else profile.embedder.model_name,
        "fitted_on": None if profile is None else profile.fitted_on,
        "fitted_at": None if profile is None else profile.fitted_at,
    }
