"""The experiment that measures the policy on a live cluster or in the simulator: its design
(a holdout of files, or a switchback of whole-cluster periods), each file's or period's
assignment, the maps recorded for it, and the read-out (`dsbra impact`) with the switchback's
queue adjustment."""
