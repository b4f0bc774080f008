// Spark grep jobs as a JVM (Scala) application: the same jobs as grep.py, for a cluster whose
// Spark work is Scala or Java. Compiled at Spark's set-up with the Scala compiler Spark ships
// (dsbra.cluster.spark.ensure_grep_jar) and submitted as
//
//     spark-submit --class dsbra.bench.Grep grep.jar [--gap-s S] [--sql] PATTERN JOB [JOB ...]
//
// JOB: comma-separated paths. Without --sql a job is an RDD from textFile (one partition per
// input split); with --sql it is a Spark SQL query over the files (a file scan).
package dsbra.bench

import org.apache.spark.sql.SparkSession

object Grep {
  private val usage = "usage: Grep [--gap-s S] [--sql] PATTERN JOB [JOB ...]"

  def main(argv: Array[String]): Unit = {
    var gapS = 0.0
    var sql = false
    var rest = argv.toList
    var parsing = true
    while (parsing) rest match {
      case "--gap-s" :: s :: tail => gapS = s.toDouble; rest = tail
      case "--sql" :: tail => sql = true; rest = tail
      case _ => parsing = false
    }
    if (rest.length < 2) {
      System.err.println(usage)
      sys.exit(2)
    }
    val pattern = rest.head
    val spark = SparkSession.builder.appName(s"dsbra-grep $pattern (scala)").getOrCreate()
    for ((paths, i) <- rest.tail.zipWithIndex) {
      if (i > 0 && gapS > 0) Thread.sleep((gapS * 1000).toLong)
      val matches =
        if (sql) {
          spark.read.text(paths.split(","): _*).createOrReplaceTempView("lines")
          val quoted = pattern.replace("'", "''")
          spark.sql(s"SELECT count(*) FROM lines WHERE value LIKE '%$quoted%'").first().getLong(0)
        } else {
          spark.sparkContext.textFile(paths).filter(_.contains(pattern)).count()
        }
      println(s"job $i matches $matches")
    }
    spark.stop()
  }
}
