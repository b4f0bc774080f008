"""A Spark grep job: count the lines of the input files that contain a pattern, as the Hive
benchmark's grep query does, through an RDD from ``textFile`` (one partition per input split,
so each task's file and split can be recomputed: docs/spark.md).

    spark-submit grep.py PATTERN PATH [PATH ...]
"""

import sys

from pyspark.sql import SparkSession


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: grep.py PATTERN PATH [PATH ...]", file=sys.stderr)
        return 2
    pattern, paths = argv[0], argv[1:]
    spark = SparkSession.builder.appName(f"dsbra-grep {pattern}").getOrCreate()
    lines = spark.sparkContext.textFile(",".join(paths))
    matches = lines.filter(lambda line: pattern in line).count()
    print(f"matches {matches}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
