"""Redis I/O: URLs and topologies, client settings, and the runner that drives plans."""
