"""The files of the daemon's state directory that more than the daemon reads (`dsbra status`,
`dsbra pause`, `dsbra impact`, the status page): their names in one place."""

PAUSE_FILE = "paused"  #: present while `dsbra pause` holds the daemon
STATUS_FILE = "status.json"  #: the last round's status document (/status)
LOCK_FILE = "dsbra.lock"  #: one daemon per state directory
HEAT_FILE = "heat.json"  #: the placement plugin's heat document, unless placement.heat_file
JOURNAL_FILE = "journal.jsonl"  #: every replication change, before it is sent
