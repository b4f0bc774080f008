"""The reproduction benchmark on the bundled real cluster (issue 11): data, schedules, replay; the
sittings that run its arms, what they record and the analysis of their runs (the scripts in
benchmarks/ drive these)."""
