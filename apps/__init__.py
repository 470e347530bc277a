"""apps: the command line (`specdraft`), the Flask service and demo pages, and the benchmark runner."""
