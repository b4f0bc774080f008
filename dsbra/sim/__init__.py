"""The discrete-event simulator behind ``dsbra sim``: a Hadoop cluster (HDFS placement, the Fair
Scheduler with delay scheduling or FIFO, the MR AM's locality matching) running a job schedule
while a replication policy from :mod:`dsbra.policy` is called every interval. See
docs/simulator.md."""
