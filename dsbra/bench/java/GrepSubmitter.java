package dsbra;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * A whole schedule of GrepScan jobs from one JVM: each submitted at its time without waiting for
 * it, then all followed to their end. A JVM per job, each waiting for its job, cost every job
 * seconds of CPU on a small cluster before its ApplicationMaster even started.
 *
 * <p>Usage: GrepSubmitter [generic options] &lt; schedule, one job per line:
 * {@code INDEX \t DELAY_MS \t NAME \t INPUT[,INPUT...] \t OUTPUT}, DELAY_MS after
 * -Ddsbra.submit.t0.ms (epoch ms; default: now). Prints one tab-separated line per event:
 * {@code submitting INDEX EPOCH_MS}, {@code submitted INDEX JOB_ID EPOCH_MS},
 * {@code finished INDEX JOB_ID STATE EPOCH_MS}, {@code failed INDEX MESSAGE}. Exit 0 when every
 * job succeeded.
 */
public class GrepSubmitter extends Configured implements Tool {

  @Override
  public int run(String[] args) throws Exception {
    Configuration conf = getConf();
    long t0 = conf.getLong("dsbra.submit.t0.ms", System.currentTimeMillis());
    long pollMs = conf.getLong("dsbra.submit.poll.ms", 2000);
    List<String[]> plan = new ArrayList<>();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (!line.isEmpty()) {
          String[] job = line.split("\t", -1);
          if (job.length != 5) {
            System.err.println("GrepSubmitter: a schedule line needs 5 tab-separated fields: " + line);
            return 2;
          }
          plan.add(job);
        }
      }
    }
    Map<String, Job> running = new ConcurrentHashMap<>();
    AtomicInteger ended = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    // submissions overlap (each writes its splits and jar to HDFS), so a slow one does not
    // delay the next job's time
    ScheduledExecutorService pool = Executors.newScheduledThreadPool(conf.getInt("dsbra.submit.threads", 4));
    for (String[] job : plan) {
      long delay = t0 + Long.parseLong(job[1]) - System.currentTimeMillis();
      pool.schedule(() -> submit(conf, job, running, ended, failed), Math.max(0, delay), TimeUnit.MILLISECONDS);
    }
    while (ended.get() < plan.size()) {
      Thread.sleep(pollMs);
      for (Map.Entry<String, Job> entry : running.entrySet()) {
        Job job = entry.getValue();
        try {
          if (!job.isComplete()) {
            continue;
          }
          JobStatus.State state = job.getJobState();
          if (state != JobStatus.State.SUCCEEDED) {
            failed.incrementAndGet();
          }
          emit("finished", entry.getKey(), job.getJobID().toString(), state.toString(),
              Long.toString(System.currentTimeMillis()));
        } catch (Exception e) {  // the ApplicationMaster or history answering late: ask again
          continue;
        }
        running.remove(entry.getKey());
        ended.incrementAndGet();
      }
    }
    pool.shutdownNow();
    return failed.get() == 0 ? 0 : 1;
  }

  private static void submit(Configuration base, String[] spec, Map<String, Job> running,
                             AtomicInteger ended, AtomicInteger failed) {
    String index = spec[0];
    try {
      Configuration conf = new Configuration(base);
      conf.set("mapreduce.job.name", spec[2]);
      Job job = GrepScan.newJob(conf, spec[3], spec[4]);
      emit("submitting", index, Long.toString(System.currentTimeMillis()));
      job.submit();
      emit("submitted", index, job.getJobID().toString(), Long.toString(System.currentTimeMillis()));
      running.put(index, job);
    } catch (Exception e) {
      emit("failed", index, String.valueOf(e).replaceAll("\\s+", " "));
      failed.incrementAndGet();
      ended.incrementAndGet();
    }
  }

  private static synchronized void emit(String... fields) {
    System.out.println(String.join("\t", fields));
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    System.exit(ToolRunner.run(new GrepSubmitter(), args));
  }
}
