"""The Python client through the in-cluster bridge, with real pods."""

from __future__ import annotations

import pytest
from conftest import Cluster, pool, template

import sandpod

PRINT_TASK = ["python3", "-c", "import os, sys; print(os.environ['TASK'], sys.version_info[0])"]
PRINT_DOUBLE = 'python3 -c \'import json; print(json.load(open("task/input.json"))["n"] * 2)\''


def pool_ready(cluster: Cluster, namespace: str, name: str, n: int):
    def cond() -> tuple[bool, str]:
        status = cluster.get("sandboxwarmpool", "-n", namespace, name).get("status", {})
        return status.get("readyReplicas", 0) >= n, str(status)

    return cond


def test_claim_from_warm_pool_runs_python(
    cluster: Cluster, namespace: str, client: sandpod.Client
) -> None:
    cluster.apply(template(namespace, "python"))
    cluster.apply(pool(namespace, "python", "python", 2))
    cluster.wait_for("a warm pool of 2", pool_ready(cluster, namespace, "python", 2))

    with client.claim("python", env={"TASK": "rollout-7"}) as sb:
        assert sb.warm is True
        assert sb.info.pool == "python"
        result = sb.run(PRINT_TASK)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "rollout-7 3\n"

        sb.files.write("task/input.json", '{"n": 21}')
        result = sb.run(
            'python3 -c \'import json; print(json.load(open("task/input.json"))["n"] * 2)\'',
            check=True,
        )
        assert result.stdout.strip() == "42"
        assert sb.files.read_text("task/input.json") == '{"n": 21}'

        with pytest.raises(sandpod.CommandFailed):
            sb.run("exit 3", check=True)
    # Leaving the block deleted it.
    with pytest.raises(sandpod.SandboxNotFound):
        client.get(sb.name)


def test_claim_many_beyond_the_pool(
    cluster: Cluster, namespace: str, client: sandpod.Client
) -> None:
    cluster.apply(template(namespace, "python"))
    cluster.apply(pool(namespace, "python", "python", 1))
    cluster.wait_for("a warm pool of 1", pool_ready(cluster, namespace, "python", 1))

    with client.claim_many("python", 3) as boxes:
        names = {sb.name for sb in boxes}
        assert len(names) == 3
        assert sum(1 for sb in boxes if sb.warm) >= 1
        for sb in boxes:
            assert sb.run(["python3", "-c", "print(1 + 1)"]).stdout == "2\n"


def test_suspended_sandbox_without_auto_resume_refuses_exec(
    cluster: Cluster, namespace: str, client: sandpod.Client
) -> None:
    cluster.apply(template(namespace, "python"))
    with client.claim("python") as sb:
        sb.suspend()
        cluster.wait_for(
            "the sandbox to be suspended",
            lambda: (sb.refresh().status == sandpod.Phase.SUSPENDED, str(sb.status)),
        )
        with pytest.raises(sandpod.FailedPrecondition):
            sb.run("true")
        sb.resume()
        assert sb.run(["python3", "-c", "print('back')"]).stdout == "back\n"
