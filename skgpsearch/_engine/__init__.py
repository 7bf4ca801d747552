"""Internal GP engines: fit hyperparameters, evaluate, predict; O(n²) memory."""
