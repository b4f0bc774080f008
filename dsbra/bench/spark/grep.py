"""Spark grep jobs: count the lines of the input files that contain a pattern, as the Hive
benchmark's grep query does, through an RDD from ``textFile`` (one partition per input split,
so each task's file and split can be recomputed: docs/spark.md). One application runs the jobs
one after the other on the executors it holds, as a long-running application (a notebook, a
Thrift server) runs its queries.

    spark-submit grep.py [--gap-s S] PATTERN JOB [JOB ...]    # JOB: comma-separated paths
"""

import argparse
import sys
import time

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="grep.py")
    ap.add_argument("--gap-s", type=float, default=0.0, help="pause between two jobs")
    ap.add_argument("pattern")
    ap.add_argument("jobs", nargs="+", help="one job's input: comma-separated paths")
    args = ap.parse_args(argv)
    spark = SparkSession.builder.appName(f"dsbra-grep {args.pattern}").getOrCreate()
    for i, paths in enumerate(args.jobs):
        if i and args.gap_s:
            time.sleep(args.gap_s)
        lines = spark.sparkContext.textFile(paths)
        print(f"job {i} matches {lines.filter(lambda line: args.pattern in line).count()}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
