"""Observe a live Hadoop cluster: REST clients, history/split parsers, the polling collector.

The data flow is clients (``http``) -> raw task records (``jhist``, ``splits``, ``collector``)
-> per-block counters (``dsbra.signals``). Everything that talks to the network lives here;
everything that computes lives in ``dsbra.signals``.
"""
