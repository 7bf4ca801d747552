"""Quick start: a small kernel-structure search on the Mauna Loa CO2 series.

The fitting engine of skgpsearch arrives with the regressor; until then this
script drives scikit-learn's ``GaussianProcessRegressor`` with the pieces the
package already has: the compositional grammar proposes structures, each
structure becomes a scikit-learn kernel (children start from their parent's
fitted hyperparameters), and the Bayesian information criterion picks the
best one at every depth.

Run:  python examples/quickstart.py
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import WhiteKernel

from skgpsearch.datasets import load_mauna_loa
from skgpsearch.grammar import CompositionalGrammar
from skgpsearch.kernels import DataSummary, from_kernel, to_kernel


def fit_structure(expr, X, y, summary, parent):
    """Fit one candidate; return (BIC on the log-evidence scale, fitted structure)."""
    kernel = to_kernel(expr, summary=summary, parent=parent) + WhiteKernel(0.1, (1e-6, 1.0))
    gp = GaussianProcessRegressor(kernel, n_restarts_optimizer=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, y)
    k = gp.kernel_.n_dims  # kernel hyperparameters + the noise variance
    bic = gp.log_marginal_likelihood_value_ - 0.5 * k * np.log(len(y))
    fitted = from_kernel(gp.kernel_.k1, n_features=X.shape[1])
    return bic, fitted


def main(n_months=120, max_depth=4):
    X, y = load_mauna_loa(return_X_y=True, n_samples=n_months)
    X = X - X[0]  # years since the first month
    y = (y - y.mean()) / y.std()
    summary = DataSummary.from_data(X, y)
    grammar = CompositionalGrammar(base_kernels=("SE", "PER", "LIN"))
    print(f"Mauna Loa CO2, first {n_months} months; grammar {grammar}")
    print(f"{'depth':>5} {'candidates':>10} {'best BIC':>10}  best structure")

    start = time.perf_counter()
    best_score, best = -np.inf, None
    candidates = grammar.initial(n_features=1)
    for depth in range(1, max_depth + 1):
        results = [fit_structure(c, X, y, summary, best) for c in candidates]
        score, fitted = max(results, key=lambda r: r[0])
        if score <= best_score:
            print(f"{depth:>5} {len(candidates):>10} {score:>10.2f}  (no improvement: stop)")
            break
        best_score, best = score, fitted
        print(f"{depth:>5} {len(candidates):>10} {score:>10.2f}  {best}")
        candidates = grammar.expand(best, n_features=1)
    print(f"Chosen structure: {best}   ({time.perf_counter() - start:.1f} s)")
    for leaf in best.leaves:
        values = ", ".join(f"{k}={np.round(v, 3)}" for k, v in leaf.params.items())
        print(f"  {leaf}: {values}")


if __name__ == "__main__":
    main()
