"""The benchmark runner: prompt sets from real text, decoding methods, suites, reports (`specdraft bench`)."""
