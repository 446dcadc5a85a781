"""A Chroma server as the vector store: the ``HttpClient`` of a :class:`ChromaAddress`.

With a server, the data dir holds nothing of the vectors: every node of a deployment (and
every tool run beside it, ``doctor``, ``reindex``, ``export``) reaches the same collections.
One agentmem store owns one Chroma database: collection names depend only on (tenant,
partition), so two stores sharing a database would read each other's vectors; a
``?database=NAME`` in the URL gives each store its own. The database is created on first
use when missing.

Example:
    >>> client = http_client(ChromaAddress.parse("http://chroma:8000?database=prod"))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ..config import ChromaAddress
from ..errors import StorageError


def http_client(address: ChromaAddress) -> Any:
    """A ``chromadb.HttpClient`` on ``address``, its database created when missing.

    Raises:
        StorageError: the server cannot be reached or refuses the tenant/database.
    """
    import chromadb
    from chromadb.config import Settings

    where = f"Chroma server {'https' if address.ssl else 'http'}://{address.host}:{address.port}"

    def settings() -> Settings:
        # one Settings object per client: chromadb writes the server address into it
        return Settings(
            anonymized_telemetry=False,
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host=address.host,
            chroma_server_http_port=address.port,
            chroma_server_ssl_enabled=address.ssl,
        )

    try:
        admin = chromadb.AdminClient(settings())
        try:
            admin.get_database(address.database, tenant=address.tenant)
        except Exception as exc:
            if not _missing(exc):
                raise
            admin.create_database(address.database, tenant=address.tenant)
        return chromadb.HttpClient(
            host=address.host,
            port=address.port,
            ssl=address.ssl,
            tenant=address.tenant,
            database=address.database,
            settings=settings(),
        )
    except Exception as exc:
        raise StorageError(
            f"{where} (tenant {address.tenant}, database {address.database}) unavailable: {exc}"
        ) from exc


def _missing(exc: Exception) -> bool:
    text = str(exc).lower()
    return type(exc).__name__ == "NotFoundError" or "not found" in text or "does not exist" in text
