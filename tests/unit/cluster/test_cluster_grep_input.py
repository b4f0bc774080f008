"""The grep benchmark's input lines (pure; the jobs that read them run in the integration tests)."""

from dsbra.cluster.jobs import grep_lines


def test_lines_have_the_hive_grep_format_and_are_reproducible():
    data = grep_lines(1000, seed=3)
    assert data == grep_lines(1000, seed=3) != grep_lines(1000, seed=4)
    lines = data.decode().splitlines()
    assert len(lines) == 1000
    for i, line in enumerate(lines):
        key, rest = line.split("\t")
        assert len(key) == 10 and rest[:10] == f"{i:010d}" and len(rest) == 90


def test_match_rate_sets_how_many_lines_grep_finds():
    assert sum(b"XYZ" in line for line in grep_lines(5000, 1).splitlines()) in range(25, 80)
    assert b"XYZ" not in grep_lines(2000, 1, match_rate=0.0)
