"""The Sphinx documentation builds without a single warning."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    # -W turns warnings into errors, --keep-going reports all of them; -E ignores any
    # saved environment, so every page is read. A subprocess keeps Sphinx's imports
    # and logging out of the test session.
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"sphinx-build failed:\n{result.stdout}\n{result.stderr}"
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    html = tmp_path / "html"
    for page in ("index", "api", "grammar", "regression", "classification", "kernel_search_cv",
                 "criteria", "mismatch", "gallery/index", "references", "architecture"):
        assert (html / f"{page}.html").is_file(), page
    # Every example script has its gallery page, and the API page documents the estimators.
    for script in (DOCS.parent / "examples").glob("*.py"):
        assert (html / "gallery" / f"{script.stem}.html").is_file(), script.name
    api = (html / "api.html").read_text(encoding="utf-8")
    for name in ("skgpsearch.CompositionalGPRegressor", "skgpsearch.CompositionalGPClassifier",
                 "skgpsearch.KernelSearchCV", "skgpsearch.criteria.get_criterion",
                 "skgpsearch.grammar.parse", "skgpsearch.kernels.to_kernel",
                 "skgpsearch.datasets.load_mauna_loa"):
        assert f'id="{name}"' in api, name
