"""A schedule's grep jobs in one long-running Spark application, as a Thrift server, Livy or a
notebook runs many users' queries: its executors are held for the whole schedule, and each job
is submitted at its time from its own thread into a Fair scheduler pool of its own
(spark.scheduler.mode=FAIR), so concurrent jobs share the executors as the pools' fair shares
say. Each job is an RDD from ``textFile`` over its input files (one partition per split, a
split per block), counting the lines whose field (after the key) holds the pattern; its job group is its schedule job id, so
Spark's REST API names which of its jobs and stages belong to which schedule job.

    spark-submit replay_app.py PATTERN PLAN EXECUTORS

PLAN: a JSON file ``[{"job_id", "submit_s", "inputs": [paths]}]``. The schedule starts once the
application holds its EXECUTORS (as a server that has been up for a while does): its first
line on stdout is ``{"t0_ms": ...}``, and a job is submitted at t0_ms + submit_s (at once when
late). Then one JSON line per job: ``{"job_id", "submitted_ms", "finished_ms", "matches"}``
(``error`` instead of matches if it failed).
"""

import json
import sys
import threading
import time

from pyspark.sql import SparkSession

#: how long the application may take to get its executors from YARN
EXECUTORS_WAIT_S = 300


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    pattern, plan_path, executors = argv[0], argv[1], int(argv[2])
    with open(plan_path) as fh:
        plan = json.load(fh)
    spark = SparkSession.builder.appName("dsbra-replay").getOrCreate()
    sc = spark.sparkContext
    deadline = time.time() + EXECUTORS_WAIT_S
    # the block managers registered: the executors' and the driver's own
    while sc._jsc.sc().getExecutorMemoryStatus().size() < executors + 1:
        if time.time() > deadline:
            print(f"fewer than {executors} executors after {EXECUTORS_WAIT_S} s", file=sys.stderr)
            spark.stop()
            return 1
        time.sleep(0.5)
    t0_ms = int(time.time() * 1000)
    print(json.dumps({"t0_ms": t0_ms}), flush=True)
    printed = threading.Lock()
    failed = []

    def run(job: dict) -> None:
        delay = t0_ms / 1000 + float(job["submit_s"]) - time.time()
        if delay > 0:
            time.sleep(delay)
        sc.setLocalProperty("spark.scheduler.pool", job["job_id"])
        sc.setJobGroup(job["job_id"], f"dsbra replay job {job['job_id']}")
        record = {"job_id": job["job_id"], "submitted_ms": int(time.time() * 1000)}
        try:
            # minPartitions 1: a split per block, as a map (textFile's default of 2 cuts a
            # one-block job's file in halves); the pattern in the field after the key, as the
            # Hive benchmark's query (WHERE field LIKE '%XYZ%') reads the grep table
            record["matches"] = sc.textFile(",".join(job["inputs"]), minPartitions=1).filter(
                lambda line: pattern in line.partition("\t")[2]).count()
        except Exception as exc:  # a failed job is reported, the others go on
            record["error"] = str(exc).splitlines()[0][:300]
            failed.append(job["job_id"])
        record["finished_ms"] = int(time.time() * 1000)
        with printed:
            print(json.dumps(record), flush=True)

    threads = [threading.Thread(target=run, args=(job,)) for job in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
