"""Cross-validation: the folds, their scoring and pruning, code candidates in the sandbox."""
