"""The bundled real Hadoop cluster: one master host and N worker hosts on this machine.

Each worker is its own Linux network namespace with its own IP address, so HDFS block
locations, YARN node names and MapReduce split hosts all name distinct hosts and node-local
map tasks are real. See docs/cluster.md.
"""

from dsbra.cluster.spec import ClusterSpec

__all__ = ["ClusterSpec"]
