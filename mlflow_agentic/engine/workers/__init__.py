"""The worker pool that runs fold fits and refits: local processes, Dask or Ray."""
