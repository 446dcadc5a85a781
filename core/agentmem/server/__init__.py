"""Server mode: many processes share one memory over HTTP (``agentmem serve``).

- :func:`~agentmem.server.app.create_app`: the ASGI app (FastAPI) over one open
  :class:`~agentmem.AgentMemory`.
- :func:`~agentmem.server.runner.serve`: run it with uvicorn until SIGTERM/SIGINT.
- :mod:`~agentmem.server.keys`: API keys (create, list, revoke, check).

Needs the ``server`` extra (``pip install 'agentmem-layer[server]'``) except for
:mod:`~agentmem.server.keys`, which the ``agentmem keys`` command uses without it; so this
package imports nothing at import time. Clients use :func:`agentmem.connect`.
"""

from __future__ import annotations
