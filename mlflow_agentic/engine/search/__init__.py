"""The loop and its budget: proposing, running batches, recording attempts, the steps after."""
