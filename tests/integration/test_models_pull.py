"""`contreact models pull|check FILE` against the Ollama stand-in (a real socket, the
real ``ollama`` client, Ollama's streamed ``/api/pull`` progress)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contreact_cli.main import main
from tests.fake_ollama import closed_port_host, running_fake_ollama


def config(tmp_path: Path, model: str, host: str, backend: str = "ollama") -> Path:
    path = tmp_path / f"{model.replace(':', '_')}.yaml"
    data = {
        "model_name": model,
        "cycle_count": 1,
        "backend": backend,
        "ollama_client_config": {"host": host},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def contreact(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def test_pull_fetches_a_missing_model_with_progress(tmp_path, capsys) -> None:
    with running_fake_ollama(pullable={"llama3:latest": 4_700_000_000}) as fake:
        path = config(tmp_path, "llama3", fake.host)
        code, out, _ = contreact(capsys, "models", "pull", str(path))
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == f"pulling llama3:latest on {fake.host}"
        assert "  pulling manifest" in lines
        percents = [line for line in lines if "% of 4.7 GB" in line]
        assert [p.split(":")[-1].split("%")[0].strip() for p in percents] == [
            "25",
            "50",
            "75",
            "100",
        ]
        assert lines[-2:] == ["  success", f"{fake.host}: llama3:latest (pulled)"]
        assert fake.models == ["llama3:latest"]
        pulls = [body for path_, body in fake.requests if path_ == "/api/pull"]
        assert [p["model"] for p in pulls] == ["llama3:latest"]

        # Now it is there: nothing more to pull.
        code, out, _ = contreact(capsys, "models", "pull", str(path))
        assert code == 0
        assert out.strip() == f"{fake.host}: llama3:latest (present)"
        assert len([p for p, _ in fake.requests if p == "/api/pull"]) == 1


def test_check_names_what_is_missing_and_pulls_nothing(tmp_path, capsys) -> None:
    with running_fake_ollama(pullable={"qwen3:8b": 5_000_000}) as fake:
        path = config(tmp_path, "qwen3:8b", fake.host)
        code, out, _ = contreact(capsys, "models", "check", str(path))
        assert code == 1
        assert f"{fake.host}: MISSING qwen3:8b: not pulled" in out
        assert f"contreact models pull {path}" in out
        assert not [p for p, _ in fake.requests if p == "/api/pull"]
        assert fake.models == []


def test_a_model_ollama_does_not_have_is_reported_missing_with_its_reason(tmp_path, capsys) -> None:
    with running_fake_ollama(models=["present:latest"]) as fake:
        path = config(tmp_path, "no-such-model:1b", fake.host)
        code, out, _ = contreact(capsys, "models", "pull", str(path))
        assert code == 1
        assert (
            f"{fake.host}: MISSING no-such-model:1b: pull model manifest: file does not exist"
        ) in out


def test_host_option_overrides_the_file_and_an_unreachable_host_is_one_line(
    tmp_path, capsys
) -> None:
    path = config(tmp_path, "llama3", closed_port_host())
    code, out, err = contreact(capsys, "models", "pull", str(path))
    assert code == 2
    assert err.count("\n") == 1 and "Ollama does not answer at" in err and "--host" in err
    with running_fake_ollama(models=["llama3:latest"]) as fake:
        code, out, _ = contreact(capsys, "models", "check", str(path), "--host", fake.host)
        assert code == 0
        assert out.strip() == f"{fake.host}: llama3:latest (present)"


def test_a_config_whose_backend_needs_no_ollama_pulls_nothing(tmp_path, capsys) -> None:
    path = config(tmp_path, "scripted-model", closed_port_host(), backend="scripted")
    path.write_text(
        yaml.safe_dump({**yaml.safe_load(path.read_text()), "script": {"replies": [{}]}})
    )
    code, out, _ = contreact(capsys, "models", "pull", str(path))
    assert code == 0
    assert "no model to run on Ollama" in out


def test_a_bad_config_is_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("model_name: x\ncycle_count: 0\n")
    code, _, err = contreact(capsys, "models", "pull", str(path))
    assert code == 2
    assert err.startswith("contreact: error:") and "cycle_count" in err
