"""Acting on HDFS: WebHDFS writes, cluster health checks and the action journal.

Data flow: observe -> signals -> policy -> **act** -> daemon. Everything here performs I/O or
guards it; the decisions themselves come from :mod:`dsbra.policy`.
"""
