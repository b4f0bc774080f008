package dsbra;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * The Hive grep benchmark's query (SELECT * FROM grep WHERE field LIKE '%XYZ%') as a map-only
 * MapReduce job: every map scans its split and writes the lines whose value holds the pattern.
 * Usage: GrepScan [generic options] INPUT[,INPUT...] OUTPUT  (pattern: -Ddsbra.grep.pattern, XYZ)
 */
public class GrepScan extends Configured implements Tool {

  public static class ScanMapper extends Mapper<LongWritable, Text, Text, NullWritable> {
    private byte[] pattern;

    @Override
    protected void setup(Context context) {
      pattern = context.getConfiguration().get("dsbra.grep.pattern", "XYZ").getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected void map(LongWritable offset, Text line, Context context) throws IOException, InterruptedException {
      byte[] bytes = line.getBytes();
      int tab = 0;
      int n = line.getLength();
      while (tab < n && bytes[tab] != '\t') {
        tab++;
      }
      if (contains(bytes, tab + 1, n, pattern)) {
        context.write(line, NullWritable.get());
      }
    }

    static boolean contains(byte[] data, int from, int to, byte[] needle) {
      outer:
      for (int i = from; i + needle.length <= to; i++) {
        for (int k = 0; k < needle.length; k++) {
          if (data[i + k] != needle[k]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }
  }

  @Override
  public int run(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: GrepScan [generic options] INPUT[,INPUT...] OUTPUT");
      return 2;
    }
    return newJob(getConf(), args[0], args[1]).waitForCompletion(true) ? 0 : 1;
  }

  /** The scan of {@code inputs} (comma-separated) into {@code output}, not yet submitted. */
  static Job newJob(Configuration conf, String inputs, String output) throws IOException {
    Job job = Job.getInstance(conf, conf.get("mapreduce.job.name", "grep-scan"));
    job.setJarByClass(GrepScan.class);
    job.setMapperClass(ScanMapper.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(NullWritable.class);
    FileInputFormat.setInputPaths(job, inputs);
    FileOutputFormat.setOutputPath(job, new Path(output));
    return job;
  }

  public static void main(String[] args) throws Exception {
    System.exit(ToolRunner.run(new GrepScan(), args));
  }
}
