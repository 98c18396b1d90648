"""The lab: OpenStack and VMs stood in for on one machine (tests, demo)."""
