"""What connects a cluster's health to Tacker's automatic heal: the
Prometheus alerting rules whose alerts name a VNFC, and Alertmanager's
route to Tacker's Prometheus plugin."""
