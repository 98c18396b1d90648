"""Running steps across hosts: bounded parallelism, per-host errors."""
