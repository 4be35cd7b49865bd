"""What comes after the loop's attempts: selection, the refit, ensembles and stacks, attempt.py."""
