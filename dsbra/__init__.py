"""dsbra: Delay Scheduling Based Replication for HDFS.

Data flow: observe (REST clients) -> signals (per-block counters) -> policy (pure DSBRA
round) -> act (WebHDFS with safety rails) -> daemon (loop, state, metrics).
"""
