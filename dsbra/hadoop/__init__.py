"""Everything that talks to Hadoop, one module per concern.

- :mod:`dsbra.hadoop.rest`: one small client per REST protocol (ResourceManager, MapReduce
  ApplicationMaster, JobHistoryServer, WebHDFS reads, JMX), following HA pairs;
- :mod:`dsbra.hadoop.hdfs`: WebHDFS through HdfsCLI, for the calls that change HDFS;
- :mod:`dsbra.hadoop.auth`: TLS and Kerberos (SPNEGO) for both;
- :mod:`dsbra.hadoop.shapes`: the REST replies' JSON shapes across Hadoop 3.4 and 3.5.
- :mod:`dsbra.hadoop.locality`: the schedulers' delay-scheduling settings, their Hadoop
  defaults and bounds.

Every failure is a :class:`dsbra.errors.HadoopError` carrying the Java exception name when the
server sent one. observe, act, cluster, conf, bench and the daemon reach Hadoop through here.
"""
