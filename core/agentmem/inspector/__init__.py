"""The inspector: server-rendered pages to look inside a store, and why recall scored what it
did.

- ``agentmem --home DIR ui`` (:func:`~agentmem.inspector.runner.run_ui`): the pages of one
  data dir on loopback, read-only unless started ``--writable``
  (:func:`~agentmem.inspector.app.create_ui_app`).
- ``agentmem serve``: the same pages under ``/ui``, behind an API key's tenant and pins (a
  login form keeps the key in an HttpOnly cookie; :mod:`.access`).

Pages (:mod:`.pages`): the start page (tenants, health, plots of recent recalls), a tenant's
users, agents, tiers and sessions, pages of rows, one row's story (sources, supersession
history, audit), and search with the explanation of each candidate
(:func:`agentmem.recall.explain.recall_explain`). Changes (:mod:`.actions`): forget a row,
erase a user, close a session again, each confirmed on a page of its own and posted with a
CSRF token.

Plain HTML from Jinja2 templates that escape every stored text, one stylesheet, no script;
every file ships in the package. Needs the ``server`` extra, so this package imports nothing
at import time.
"""

from __future__ import annotations
