"""The README's code runs as written and its quick start is what CI runs."""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@pytest.mark.slow
def test_readme_python_example_runs_and_prints_what_it_says():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README has no python example"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})  # noqa: S102 - runs the docs, not package code
    lines = out.getvalue().splitlines()
    assert lines[0] == "SE(0) * PER(0)"
    assert lines[1] == "Structure: SE(x0) * PER(x0)"
    assert lines[2] == "[]"  # no degenerate optimum
    assert lines[3] == "forecast"  # the select stage's rule on one column
    assert lines[4] == "SE(0) + SE(1)"  # the classifier's search ignores the irrelevant column 2
    assert lines[5] == "stacking"
    assert lines[6].split() == ["SE(2)", "+", "SE(0)", "*", "SE(1)", "5", "2"]


def test_quick_start_has_two_commands_and_ci_runs_the_test_command():
    quick = re.search(r"## Quick start\n\n```bash\n(.*?)```", README, flags=re.S).group(1)
    commands = [line for line in quick.splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].endswith("&& skgpsearch demo")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()
