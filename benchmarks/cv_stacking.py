"""Select-stage experiment (issue 29): stacking on 5-fold-with-refit densities against stacking on LOO densities.

The default regressor is fitted on a tabular.py fold; its finalists' leave-one-out densities (at
hyperparameters fitted on every training row) and their out-of-fold densities (each finalist refitted
on 4/5 of the training rows from its fitted values, 5 folds) each give stacking weights, and both
mixtures are scored on the fold's test rows. Leave-one-out at fitted hyperparameters is optimistic for
flexible structures; the question is whether refits change the held-out result, and at what cost.

    python benchmarks/cv_stacking.py cpus:8 diabetes:0 auto_mpg:2

Prints one table row per fold: SMSE and MSLL of both mixtures, the seconds of the refits and the
finalists with the largest weights.
"""
import sys
import time
import warnings

import numpy as np
import tabular as T  # the benchmarks folder is on sys.path when run as a script
from scipy import stats
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler
from skgpsearch._search._pipeline import stacking_weights


def scores(models, weights, Xt, yte, ytr):
    mean, dens = T._regression_density([(m, w) for m, w in zip(models, weights)], Xt, yte)
    return T._regression_scores(mean, dens, ytr, yte)

print("| fold | refit s | finalists | LOO stacking SMSE / MSLL | its top weights | CV stacking SMSE / MSLL | its top weights |")
print("|---|---|---|---|---|---|---|")
for spec in sys.argv[1:]:
    name, fold = spec.split(":")
    fold = int(fold)
    X, y, task = T.load(name)
    tr, te = T.folds(X, y, task)[fold]
    scaler = StandardScaler().fit(X[tr])
    Xs, Xt, ytr, yte = scaler.transform(X[tr]), scaler.transform(X[te]), y[tr], y[te]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = T.RecordingRegressor(random_state=0, n_jobs=2).fit(Xs, ytr)
        fitter, outcome = est._recorded[0]
        records = [r for r in outcome.finalists if r.ok]
        models = [fitter.model(r) for r in records]
        loo = np.column_stack([m.loo_log_density() for m in models])
        t = time.perf_counter()
        oof = np.zeros((len(ytr), len(models)))
        for j, m in enumerate(models):
            # the finalist as a fitted estimator, refitted per inner fold from its own values (no random restarts)
            view = est._unfitted_copy().set_params(n_restarts=0)
            view._adopt([m], Xs, ytr)
            for a, b in KFold(5, shuffle=True, random_state=0).split(Xs):
                r = view._refit_structure(Xs[a], ytr[a])
                mean, std = r.predict(Xs[b], return_std=True)  # of a new observation: noise included
                oof[b, j] = stats.norm.logpdf(ytr[b], mean, std)
        cv_sec = time.perf_counter() - t
    w_loo, w_cv = stacking_weights(loo), stacking_weights(oof)
    row = [f"{name} {fold}", f"{cv_sec:.0f}", str(len(models))]
    for w in (w_loo, w_cv):
        s = scores(models, w, Xt, yte, ytr)
        top = ", ".join(f"{records[i].structure} ({w[i]:.2f})" for i in np.argsort(-w)[:2])
        row += [f"{s['smse']:.4f} / {s['msll']:.4f}", top]
    print("| " + " | ".join(row) + " |", flush=True)
