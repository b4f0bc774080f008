"""The reproduction benchmark on the bundled real cluster (issue 11): data, schedules, replay."""
