"""``agentmem keys`` (beside a running server too) and ``agentmem --url ... stats|doctor|export``
against a running server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem.cli import main
from agentmem.maintenance.transfer import export_lines


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentmem.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_keys_create_list_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(tmp_path / "data")
    assert main(["--home", home, "keys", "create", "--tenant", "acme", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert {"key", "id", "tenant"} <= set(created) and created["tenant"] == "acme"
    assert created["key"].startswith("amk_" + created["id"] + "_")
    assert main(["--home", home, "keys", "create", "--tenant", "acme", "--user", "u1",
                 "--agent", "bot", "--name", "web", "--json"]) == 0  # fmt: skip
    pinned = json.loads(capsys.readouterr().out)
    assert (pinned["user"], pinned["agent"], pinned["name"]) == ("u1", "bot", "web")

    assert main(["--home", home, "keys", "list", "--json"]) == 0
    listed = capsys.readouterr().out
    assert [k["id"] for k in json.loads(listed)["keys"]] == [created["id"], pinned["id"]]
    secret = created["key"].split("_", 2)[2]
    assert secret not in listed
    # stored hashed: the secret is nowhere in the data dir
    for path in Path(home).rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path

    assert main(["--home", home, "keys", "revoke", created["id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revoked_at"]
    assert main(["--home", home, "keys", "list"]) == 0
    assert created["id"] in capsys.readouterr().out

    assert main(["--home", home, "keys", "revoke", "000000000000"]) == 1
    assert "no API key" in capsys.readouterr().err
    assert main(["--home", home, "keys", "create"]) == 2  # the tenant is required
    assert "tenant_id" in capsys.readouterr().err
    assert main(["--home", home, "keys", "create", "--tenant", "a", "--admin", "--user", "u"]) == 2
    assert "pinned" in capsys.readouterr().err


def test_operator_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(tmp_path / "data")
    assert main(["--home", home, "keys", "create", "--tenant", "ops", "--operator", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert created["operator"] is True and created["admin"] is False
    assert main(["--home", home, "keys", "create", "--tenant", "t", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["operator"] is False
    assert (
        main(["--home", home, "keys", "create", "--tenant", "t", "--operator", "--agent", "a"]) == 2
    )
    assert "operator" in capsys.readouterr().err
    assert main(["--home", home, "keys", "list", "--json"]) == 0
    assert [k["operator"] for k in json.loads(capsys.readouterr().out)["keys"]] == [True, False]


def test_serve_refuses_a_bad_metrics_port(tmp_path: Path) -> None:
    done = cli("--home", str(tmp_path / "data"), "serve", "--metrics-port", "70000")
    assert done.returncode == 2 and "not a port number" in done.stderr


def test_keys_made_by_the_cli_beside_a_running_server_work_at_once(
    server: ServerProcess,
) -> None:
    made = cli("--home", str(server.home), "keys", "create", "--tenant", "cli-t", "--json")
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)
    with agentmem.connect(server.url, api_key=key["key"]) as client:
        assert client.whoami().tenant_id == "cli-t"
        revoked = cli("--home", str(server.home), "keys", "revoke", key["id"])
        assert revoked.returncode == 0, revoked.stderr
        with pytest.raises(agentmem.AuthError):
            client.bind(user_id="u1").messages()


def test_stats_doctor_export_against_a_server(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = server.create_key("exp", admin=True)
    with agentmem.connect(server.url, api_key=server.create_key("exp")) as client:
        m = client.bind(user_id="u1", session_id="s1")
        m.add_message("user", "export me please")
        m.remember("exported fact", topic_key="color")
        m.add_tool_output("call-9", "tool result " * 500, tool_name="t")
        client.flush(timeout=60)
    with agentmem.connect(server.url, api_key=server.create_key("other-tenant")) as other:
        other.bind(user_id="u1").remember("not exported")

    remote = ["--url", server.url, "--api-key", admin]
    assert main([*remote, "--json", "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["tenant_id"] == "exp" and stats["stats"]["live"] == 3  # its tenant only
    operator = ["--url", server.url, "--api-key", server.create_key("ops", operator=True)]
    assert main([*operator, "--json", "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["stats"]["live"] >= 4
    assert {j["name"] for j in stats["jobs"]} == {"judge", "idle_sessions", "retention"}
    assert main([*operator, "stats"]) == 0
    shown = capsys.readouterr().out
    assert "background jobs" in shown
    assert all(job in shown for job in ("judge", "idle_sessions", "retention"))

    assert main([*remote, "--json", "doctor"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True

    target = tmp_path / "export.jsonl"
    assert main([*remote, "--user", "u1", "export", "-o", str(target)]) == 2  # not a filter
    assert "cannot narrow to --user u1" in capsys.readouterr().err and not target.exists()
    assert main([*remote, "export", "-o", str(target)]) == 0
    assert "exported 3 line(s)" in capsys.readouterr().out
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert {line["tenant_id"] for line in lines} == {"exp"}
    by_type = {line["type"]: line for line in lines}
    assert by_type["memory"]["topic_key"] == "color"
    assert by_type["tool_output"]["full_content"] == "tool result " * 500
    assert main([*remote, "export", "--kind", "memory"]) == 0
    assert [json.loads(x)["type"] for x in capsys.readouterr().out.splitlines()] == ["memory"]

    user_key = server.create_key("exp")
    assert main(["--url", server.url, "--api-key", user_key, "stats"]) == 1
    assert "admin" in capsys.readouterr().err
    assert main(["--url", server.url, "--api-key", user_key, "export"]) == 1
    assert main(["--url", server.url, "--api-key", admin, "reindex"]) == 2
    assert "works on a data dir" in capsys.readouterr().err
    assert main(["--url", server.url, "stats"]) == 2  # no key


def test_erase_against_a_running_server(
    server: ServerProcess, tenant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    admin_key = server.create_key(tenant, admin=True)
    with agentmem.connect(server.url, api_key=admin_key) as client:
        client.bind(user_id="u-gone").remember("A fact of the user who leaves")
        client.bind(user_id="u-stays").remember("A fact of the user who stays")
    argv = ["--url", server.url, "--api-key", admin_key, "erase", "--tenant", tenant]
    assert main([*argv, "--user", "u-gone", "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["user_id"] == "u-gone" and receipt["records"]["memories"] == 1
    assert main([*argv[:-1], tenant + "-x", "--user", "u-gone"]) == 1  # not the key's tenant
    assert "cannot erase tenant" in capsys.readouterr().err


def test_remote_mcp_serves_only_the_tools_asked_for(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmem.cli import remote_cmd

    served: list[object] = []

    async def serve(memory: object, include: object = "all") -> None:
        served.append(include)

    monkeypatch.setattr(remote_cmd, "serve_stdio", serve)
    remote = ["--url", server.url, "--api-key", server.create_key("mcp-t", agent="a1")]
    assert main([*remote, "mcp", "--tools", "recall,get_knowledge"]) == 0
    assert served == [["recall", "get_knowledge"]]
    assert main([*remote, "mcp", "--tools", "no_such_tool"]) == 2  # refused, nothing served
    assert served == [["recall", "get_knowledge"]]
    # a key pinned to a user may not reach agent state: its tools are not offered
    user_key = server.create_key("mcp-t", user="u1", agent="a1")
    assert main(["--url", server.url, "--api-key", user_key, "mcp", "--tools", "all"]) == 0
    assert "recall" in served[-1] and "get_agent_state" not in served[-1]  # type: ignore[operator]


def test_the_memory_commands_run_against_a_server(
    server: ServerProcess, tenant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commands a data dir has, over --url where the server has the operation."""
    key = server.create_key(tenant)
    who = ["--url", server.url, "--api-key", key, "--user", "u1", "--agent", "desk"]

    def run(*argv: str) -> dict[str, Any]:
        capsys.readouterr()
        status = main([*who, "--session", "s1", "--json", *argv])
        out, err = capsys.readouterr()
        assert status == 0, (argv, err)
        result: dict[str, Any] = json.loads(out)
        return result

    fact = run("remember", "The user's locker code is 4417", "--type", "fact")
    assert fact["scope"] == "user"
    said = run("add-message", "user", "Please book the meeting room for Friday")
    found = run("recall", "locker code")
    assert found["items"][0]["id"] == fact["id"]
    assert run("get", fact["id"])["content"] == "The user's locker code is 4417"
    knowledge = run("knowledge", "upsert", "Meeting rooms are booked in the portal", "--key", "m")
    assert run("knowledge", "get", "m")["id"] == knowledge["id"]
    assert run("history", fact["id"])
    assert run("answer", "what is the locker code?")["used_ids"] == [fact["id"]]
    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps([{"role": "user", "content": "I moved to Porto"}]))
    assert run("ingest", str(conversation))["memories_created"] >= 1
    assert run("close-session")["session_id"] == "s1"
    detail = run("session-detail", "s1")
    assert said["id"] in {e["id"] for e in detail["events"]}
    assert run("forget", fact["id"])["forgotten"] == [fact["id"]]
    assert run("recall", "locker code")["items"] == []
    with agentmem.connect(server.url, api_key=key) as client:  # all of it on the server
        m = client.bind(user_id="u1", agent_id="desk", session_id="s1")
        assert said["id"] in {i.id for i in m.messages()}


def test_import_restores_an_export_into_a_running_server(
    server: ServerProcess,
    tenant: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_memory: Any,
) -> None:
    """Restoring an export no longer means stopping the server; a second run stores nothing."""
    local = make_memory()
    m = local.bind(tenant, user_id="u1", agent_id="desk", session_id="s1")
    m.add_message("user", "My parcel 7781 is late")
    m.remember("The user lives in Ghent")
    m.knowledge.upsert("Parcels are tracked in the courier portal", key="track")
    export = tmp_path / "export.jsonl"
    export.write_text("\n".join(json.dumps(line) for line in export_lines(local.context)))
    local.close()
    admin = server.create_key(tenant, admin=True)
    remote = ["--url", server.url, "--api-key", admin, "--json"]

    assert main([*remote, "import", str(export)]) == 0, capsys.readouterr().err
    first = json.loads(capsys.readouterr().out)
    assert first["restored"] == 3 and first["indexed"] is True
    assert main([*remote, "import", str(export)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["restored"] == 0 and again["already_present"] == 3
    with agentmem.connect(server.url, api_key=admin) as client:
        hits = client.bind(user_id="u1").recall("where does the user live?").items
        assert hits[0].content == "The user lives in Ghent"

    other = server.create_key(tenant + "-other", admin=True)
    refused = ["--url", server.url, "--api-key", other, "import", str(export)]
    assert main(refused) == 1
    assert "this key's tenant" in capsys.readouterr().err
    user_key = server.create_key(tenant)
    assert main(["--url", server.url, "--api-key", user_key, "import", str(export)]) == 1
    assert "admin" in capsys.readouterr().err


def test_remote_import_counts_the_lines_of_the_file(
    server: ServerProcess, tenant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.dumps({"role": "user", "content": f"note {n}"}) for n in range(5)]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n")  # a final newline ends the last line
    remote = ["--url", server.url, "--api-key", server.create_key(tenant, admin=True)]
    assert main([*remote, "--user", "u1", "--session", "s1", "import", str(path)]) == 0
    progress = [x for x in capsys.readouterr().err.splitlines() if x.startswith("importing")]
    assert progress[-1] == "importing: 5/5 lines"
