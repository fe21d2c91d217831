"""Run configs: seed 003's format accepted as is; every mistake one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from contreact_cli.config_file import load_config
from contreact_events.config import parse_run_config
from contreact_events.exceptions import ConfigError

SEED_003 = """\
run_id: GPT5-A
model_name: llama3:latest
cycle_count: 10
ollama_client_config:
  host: http://localhost:11434
model_options:
  seed: 42
  temperature: 0.7
  top_p: 0.9
  num_predict: -1
  repeat_last_n: 64
  repeat_penalty: 1.1
  num_ctx: 8192
"""


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_seed_003_config_is_accepted_as_is(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, SEED_003))
    assert (config.run_id, config.model_name, config.cycle_count) == ("GPT5-A", "llama3:latest", 10)
    assert config.ollama_client_config.host == "http://localhost:11434"
    assert config.model_options.as_options() == {
        "seed": 42,
        "temperature": 0.7,
        "top_p": 0.9,
        "num_predict": -1,
        "repeat_last_n": 64,
        "repeat_penalty": 1.1,
        "num_ctx": 8192,
    }
    assert config.backend == "ollama" and config.max_steps_per_cycle == 25  # never auto


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SEED_003 + "colour: blue\n", "unknown key 'colour' (allowed here: run_id, model_name"),
        (SEED_003.replace("  seed: 42", "  seeed: 42"), "unknown key 'model_options.seeed'"),
        (SEED_003.replace("model_name: llama3:latest\n", ""), "missing required key 'model_name'"),
        (SEED_003.replace("cycle_count: 10", "cycle_count: ten"), "'cycle_count'"),
        (SEED_003.replace("cycle_count: 10", "cycle_count: 0"), "greater than 0"),
        (SEED_003.replace("cycle_count: 10", "cycle_count: -3"), "greater than 0"),
        (SEED_003.replace("run_id: GPT5-A", "run_id: 'a b{c}'"), "run_id must be"),
        ("- just\n- a list\n", "expected a mapping"),
        ("run_id: [unclosed\n", "not valid YAML (line"),
        (SEED_003 + "backend: scripted\n", "needs a 'script'"),
    ],
)
def test_config_mistakes_are_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nothere\.yaml"):
        load_config(tmp_path / "nothere.yaml")


def test_prompt_and_script_files_are_read_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("Be curious.")
    (tmp_path / "script.yaml").write_text("- content: hello {cycle}\n")
    path = write(
        tmp_path,
        SEED_003 + "system_prompt_file: prompt.txt\nbackend: scripted\nscript: script.yaml\n",
    )
    config = load_config(path, run_id="override-1")
    assert config.run_id == "override-1"
    assert config.system_prompt == "Be curious."
    assert config.script is not None and config.script.replies[0].content == "hello {cycle}"


def test_run_id_is_generated_when_absent(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "model_name: gemma3:270m\ncycle_count: 3\n"))
    assert config.run_id.startswith("gemma3-270m-")


def test_parse_refuses_non_mappings() -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        parse_run_config("run_id: x")


def test_the_required_services_follow_from_the_config() -> None:
    from contreact_cli.stack.service_waits import required_services
    from tests.support.sim import make_config

    base = ("orchestrator", "llm-worker", "memory")
    assert required_services(make_config()) == base  # diversity off, no search
    search = make_config(tools={"search_memory": True})
    assert required_services(search) == (*base, "embedder")  # search_memory needs it
    assert required_services(make_config(diversity={"enabled": True})) == (*base, "embedder")


def test_generated_run_ids_do_not_collide_within_a_second() -> None:
    from contreact_cli.config_file import default_run_id
    from contreact_events.config import RUN_ID_PATTERN

    ids = {default_run_id("llama3:latest") for _ in range(10)}
    assert len(ids) == 10  # 6 random hex digits: a collision here is a 1-in-370,000 event
    assert all(RUN_ID_PATTERN.match(i) and i.startswith("llama3-latest-") for i in ids)
