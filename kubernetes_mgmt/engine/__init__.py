"""Running a graph of steps: bounded parallelism, serial groups, checks
of gathered facts, per-step timing. Knows nothing of SSH or Tacker."""
