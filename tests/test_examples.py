"""Every script of ``examples/`` runs from an installed package, in an empty folder, with no file beside it.

Each example's ``main`` takes its sizes as keyword arguments; CI runs it on small ones (the
recorded full runs are in ``benchmarks/results/example_*.txt``).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# small arguments for ``main`` and lines the output must contain
SMALL_RUNS = {
    "quickstart": ({"n_train": 60, "n_forecast": 12, "n_jobs": 1, "max_depth": 2},
                   ["Chosen structure:", "Forecast of the next 12 months"]),
    "criteria_compared": ({"seeds": [0], "n_jobs": 1, "n_train": 50, "criteria": ["bic_light", "loo"]},
                          ["| bic_light | ", "| loo | ", "Total:"]),
    "kernel_search_cv": ({"n_classification_train": 60, "max_depth": 1, "n_jobs": 1},
                         ["| KernelSearchCV, grammar |", "| KernelSearchCV, sum of products |"]),
    "mauna_loa_decomposition": ({"folder": "figures", "n_train": 60, "n_forecast": 12, "n_jobs": 1,
                                 "max_depth": 2},
                                ["Additive components", "figures written to figures/"]),
    "pima_vs_random_forest": ({"n_rows": 120, "n_jobs": 1},
                              ["| CompositionalGPClassifier |", "| RandomForest, 500 trees |", "Chosen structure:"]),
}


def test_every_example_has_a_small_run():
    assert {script.stem for script in EXAMPLES.glob("*.py")} == set(SMALL_RUNS)


@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_examples_need_no_file_outside_the_package(name):
    source = (EXAMPLES / f"{name}.py").read_text()
    assert "shared" not in source and "read_csv" not in source and "__file__" not in source


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_example_runs_in_an_empty_folder(name, tmp_path):
    arguments, expected_lines = SMALL_RUNS[name]
    program = ("import json, runpy, sys; "
               "runpy.run_path(sys.argv[1], run_name='example')['main'](**json.loads(sys.argv[2]))")
    done = subprocess.run([sys.executable, "-c", program, str(EXAMPLES / f"{name}.py"), json.dumps(arguments)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in expected_lines:
        assert line in done.stdout, done.stdout[-3000:]
    if name == "mauna_loa_decomposition":
        gap = float(re.search(r"largest difference ([0-9.e+-]+) ppm", done.stdout).group(1))
        assert gap < 1e-6
        assert len(list((tmp_path / "figures").glob("*.png"))) >= 3
