"""`contreact models pull|check FILE` against the Ollama stand-in (a real socket, the
real ``ollama`` client, Ollama's streamed ``/api/pull`` progress), for a run config
and for an experiment file (one need per run, each model once per host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from contreact_cli.main import main
from contreact_cli.stack.ollama_models import ModelNeed, needed_models
from tests.support.fake_ollama import closed_port_host, running_fake_ollama


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


def experiment_file(tmp_path: Path, host: str, models: list[dict[str, Any]]) -> Path:
    path = tmp_path / "experiment.yaml"
    data = {
        "experiment": "pulls",
        "replicas": 3,
        "cycle_count": 1,
        "backend": "ollama",
        "ollama_client_config": {"host": host},
        "models": models,
    }
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_experiment_needs_each_of_its_models_once_per_host(tmp_path) -> None:
    path = experiment_file(
        tmp_path,
        "http://gpu-a:11434",
        [
            {"label": "Llama", "model_name": "llama3"},
            {"label": "LlamaCold", "model_name": "llama3", "model_options": {"temperature": 0}},
            {"label": "Qwen", "model_name": "qwen3:8b", "replicas": 1},
            {
                "label": "QwenB",
                "model_name": "qwen3:8b",
                "ollama_client_config": {"host": "http://gpu-b:11434"},
            },
            {
                "label": "Script",
                "model_name": "s",
                "backend": "scripted",
                "script": {"replies": [{}]},
            },
        ],
    )
    assert needed_models(path) == [
        ModelNeed("llama3:latest", "http://gpu-a:11434"),
        ModelNeed("qwen3:8b", "http://gpu-a:11434"),
        ModelNeed("qwen3:8b", "http://gpu-b:11434"),
    ]
    assert needed_models(path, "http://other:11434") == [
        ModelNeed("llama3:latest", "http://other:11434"),
        ModelNeed("qwen3:8b", "http://other:11434"),
    ]


def test_pull_fetches_every_model_of_an_experiment_once(tmp_path, capsys) -> None:
    pullable = {"stand-in-a:1b": 1_300_000_000, "stand-in-b:3b": 2_000_000_000}
    with running_fake_ollama(pullable=pullable) as fake:
        path = experiment_file(
            tmp_path,
            fake.host,
            [{"label": "A", "model_name": "stand-in-a:1b"}, {"model_name": "stand-in-b:3b"}],
        )
        code, out, _ = contreact(capsys, "models", "check", str(path))
        assert code == 1
        assert f"{fake.host}: MISSING stand-in-a:1b: not pulled" in out
        assert f"{fake.host}: MISSING stand-in-b:3b: not pulled" in out

        code, out, _ = contreact(capsys, "models", "pull", str(path))
        assert code == 0, out
        assert f"pulling stand-in-a:1b on {fake.host}" in out
        assert f"pulling stand-in-b:3b on {fake.host}" in out
        assert out.splitlines()[-1] == (
            f"{fake.host}: stand-in-a:1b (pulled), stand-in-b:3b (pulled)"
        )
        pulls = [body["model"] for path_, body in fake.requests if path_ == "/api/pull"]
        assert pulls == ["stand-in-a:1b", "stand-in-b:3b"]  # six runs, two pulls

        code, out, _ = contreact(capsys, "models", "check", str(path))
        assert code == 0
        assert out.strip() == f"{fake.host}: stand-in-a:1b (present), stand-in-b:3b (present)"


def test_a_bad_experiment_file_is_one_line_naming_the_problem(tmp_path, capsys) -> None:
    path = experiment_file(
        tmp_path, closed_port_host(), [{"label": "not a label", "model_name": "llama3"}]
    )
    code, out, err = contreact(capsys, "models", "pull", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"contreact: error: {path}:") and "label must be" in err
