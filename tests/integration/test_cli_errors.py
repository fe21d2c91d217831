"""Every subcommand, given bad arguments, answers with one line naming the problem
(``contreact: error: ...``) and a non-zero exit, never a traceback. The commands run
in-process through ``main`` against the session's real Redis; the list of cases is
checked against the parser, so a new subcommand without a case fails here."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from contreact_cli.main import build_parser, main

pytestmark = [pytest.mark.redis]

BAD_ARGUMENTS: dict[str, list[list[str]]] = {
    "up": [["--llm-workers", "0"], ["--wait", "-1"], ["--memory-workers", "many"]],
    "down": [["--now"]],
    "status": [["extra"]],
    "run": [["missing.yaml"], ["c.yaml", "--run-id", "a}{b:../"], ["c.yaml", "--wait", "0"]],
    "watch": [["no-such-run"], ["../../etc/passwd"]],
    "runs": [["--limit", "3"]],
    "show": [["no-such-run"], ["\x1b[31mred"]],
    "reply": [["no-such-run", "hello"], ["r1", "x" * 30_000]],
    "cancel": [["no-such-run"], ["r1", "--reason", "x" * 30_000]],
    "fork": [
        ["no-such-run", "--at-cycle", "2"],
        ["r1"],
        ["r1", "--at-cycle", "two"],
        ["r1", "--at-cycle", "2", "--set", "nonsense"],
        ["r1", "--at-cycle", "2", "--set", "no_such_setting=1"],
        ["r1", "--at-cycle", "2", "--run-id", "a}{b:../"],
    ],
    "ask": [
        ["no-such-run", "why?"],
        ["r1"],
        ["r1", "x" * 4001],
        ["a}{b:../", "why?"],
        ["r1", "why?", "--at-cycle", "two"],
    ],
    "query": [
        ["no-such-run", "why?"],
        ["r1"],
        ["r1", "x" * 4001],
        ["r1", "why?", "--model", "bad\nmodel"],
        ["r1", "why?", "--by", ""],
    ],
    "queries": [["no-such-run"], ["a}{b:../"]],
    "set": [
        ["no-such-run", "cycle_count=3", "--reason", "longer"],
        ["r1", "cycle_count=3"],  # no reason
        ["r1", "--reason", "longer"],  # no setting
        ["r1", "nonsense", "--reason", "longer"],
        ["a}{b:../", "cycle_count=3", "--reason", "longer"],
        ["--experiment", "no-such-experiment", "cycle_count=3", "--reason", "longer"],
        ["r1", "cycle_count=3", "--reason", " "],
    ],
    "pause": [
        ["no-such-run"],
        [],
        ["r1", "--experiment", "e"],
        ["r1", "--model", "m"],
        ["a}{b:../"],
        ["--experiment", "no-such-experiment"],
    ],
    "resume": [["no-such-run"], [], ["--experiment", "no-such-experiment", "--model", "m"]],
    "step": [["no-such-run"], ["a}{b:../"]],
    "rebuild": [["no-such-run"], ["a b"]],
    "replay": [
        ["no-such-run"],
        ["r1", "--what-if", "model_name=other"],
        ["r1", "--what-if", "diversity.moderate_threshold"],
        ["no-such-run", "--what-if", "cycle_count=2"],
    ],
    "export": [
        ["no-such-run"],
        ["r1", "--out", "FILE"],
        ["r1", "--out", "/proc/nope/x"],
        ["r1", "--format", "inspect", "--out", "FILE/x"],  # not writable: said before reading
        ["r1", "--format", "html"],
    ],
    "memory-rebuild": [["a}{b"], ["no-such-run", "--out", "FILE"]],
    "similarity": [["no-such-run"]],
    "corpus": [
        ["stats"],
        ["shrink", "--run", "r1"],
        ["clear", "--run", "no-such-run"],
        ["clear", "--experiment", "no-such-experiment"],
        ["clear", "--experiment", "a}{b:../"],
    ],
    "search": [["text", "--k", "0"], ["text", "--k", "-1"], ["text", "--run", "no-such-run"]],
    "deadletters": [["--limit", "0"], ["--limit", "-1"], ["--limit", "lots"]],
    "experiment": [
        ["run", "missing.yaml"],
        ["run", "c.yaml"],  # a run config, not an experiment file
        ["status", "a}{b:../"],
        ["status", "no-such-experiment"],
        ["cancel", "no-such-experiment"],
        ["export", "no-such-experiment", "--out", "FILE"],
        ["export", "no-such-experiment", "--format", "inspect", "--out", "FILE"],
        ["plan", "missing.yaml"],
        ["plan", "c.yaml"],  # a run config, not an experiment file
        ["plan", "bad-budget.yaml"],
        ["plan", "bad-prices.yaml"],
        ["plan", "words-budget.yaml"],
        ["plan", "e.yaml", "--calls-per-cycle", "0"],
        ["launch", "x"],
    ],
    "models": [["pull", "missing.yaml"], ["check", "c.yaml", "--host", "not a url"], ["fetch"]],
    "assess": [
        [],
        ["r1"],  # no evaluator
        ["no-such-run", "--evaluator", "m"],
        ["a}{b:../", "--evaluator", "m"],
        ["r1", "--evaluator", "m", "--temperature", "5"],
        ["r1", "--evaluator", "m", "--repeats", "0"],
        ["r1", "--evaluator", "m", "--instrument", "iq"],
        ["verify"],
        ["export", "r1"],
        ["status", "--evaluator", "m"],
        ["matrix", "no-such-experiment"],
        ["--experiment", "a}{b:../"],
        ["no-such-run", "--repeats", "0"],
    ],
    "analyze": [
        ["--out", "tables"],  # neither runs nor an experiment
        ["no-such-run", "--out", "tables"],
        ["--experiment", "no-such-experiment", "--out", "tables"],
        ["r1", "--out", "tables", "--format", "xlsx"],
        ["--experiment", "a}{b:../", "--out", "tables"],
    ],
    "conditions": [
        ["no-such-experiment"],
        ["a}{b:../"],
        ["exp", "--baseline"],  # no value
    ],
    "report": [
        ["no-such-experiment", "--out", "r.html"],
        ["a}{b:../", "--out", "r.html"],
        ["exp"],  # no --out
    ],
}


def subcommands() -> set[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def test_every_subcommand_has_bad_argument_cases() -> None:
    assert set(BAD_ARGUMENTS) == subcommands()


CASES = [(command, args) for command, many in BAD_ARGUMENTS.items() for args in many]


@pytest.mark.parametrize(
    ("command", "args"), CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)]
)
def test_bad_arguments_get_one_line(
    command: str,
    args: list[str],
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("a file, not a folder")
    (tmp_path / "c.yaml").write_text("model_name: m\ncycle_count: 1\n")
    experiment = "experiment: e\ncycle_count: 1\nmodels: [{model_name: m}]\n"
    (tmp_path / "e.yaml").write_text(experiment)
    (tmp_path / "bad-budget.yaml").write_text(experiment + "budget: {cost: -1}\n")
    (tmp_path / "words-budget.yaml").write_text(experiment + "budget: {tokens: lots}\n")
    (tmp_path / "bad-prices.yaml").write_text(experiment + "prices: [m, 1]\n")
    with pytest.raises(SystemExit) as exited:
        main([command, *args])
    captured = capsys.readouterr()
    assert exited.value.code not in (0, None), captured
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("contreact: error: ")
    assert "\x1b" not in lines[0] and len(lines[0]) < 600


def test_redis_that_does_not_answer_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.fake_ollama import closed_port_host

    port = closed_port_host().rsplit(":", 1)[1]
    monkeypatch.setenv("REDIS_URL", f"redis://:hunter2@127.0.0.1:{port}/0")
    monkeypatch.setenv("CONTREACT_DATA_DIR", str(tmp_path / "data"))
    for command in (["runs"], ["deadletters"], ["corpus", "clear", "--run", "r1"]):
        with pytest.raises(SystemExit) as exited:
            main(command)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Redis does not answer" in err
        assert "hunter2" not in err  # the password is not printed
