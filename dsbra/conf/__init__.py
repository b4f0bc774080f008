"""`dsbra conf`: size delay scheduling, render Hadoop configs from values, check a live cluster."""
