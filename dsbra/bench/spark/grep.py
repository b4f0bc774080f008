"""Spark grep jobs: count the lines of the input files that contain a pattern, as the Hive
benchmark's grep query does, through an RDD from ``textFile`` (one partition per input split,
so each task's file and split can be recomputed: docs/spark.md). One application runs the jobs
one after the other on the executors it holds, as a long-running application (a notebook, a
Thrift server) runs its queries.

    spark-submit grep.py [--gap-s S] [--sql] PATTERN JOB [JOB ...]    # JOB: comma-separated paths

``--sql`` runs each job as a Spark SQL query over the files instead (a file scan: Spark packs
pieces of several files into one partition, so its tasks are known by file, not by split).
"""

import argparse
import sys
import time

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="grep.py")
    ap.add_argument("--gap-s", type=float, default=0.0, help="pause between two jobs")
    ap.add_argument("--sql", action="store_true", help="each job as a Spark SQL query")
    ap.add_argument("pattern")
    ap.add_argument("jobs", nargs="+", help="one job's input: comma-separated paths")
    args = ap.parse_args(argv)
    spark = SparkSession.builder.appName(f"dsbra-grep {args.pattern}").getOrCreate()
    for i, paths in enumerate(args.jobs):
        if i and args.gap_s:
            time.sleep(args.gap_s)
        if args.sql:
            spark.read.text(paths.split(",")).createOrReplaceTempView("lines")
            pattern = args.pattern.replace("'", "''")
            matches = spark.sql(f"SELECT count(*) FROM lines WHERE value LIKE '%{pattern}%'").first()[0]
        else:
            # minPartitions 1: a split per block, as a map (textFile's default of 2 cuts a
            # one-block job's file in halves)
            lines = spark.sparkContext.textFile(paths, minPartitions=1)
            matches = lines.filter(lambda line: args.pattern in line).count()
        print(f"job {i} matches {matches}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
