"""The Spark session every runbook uses (classic or Spark Connect), and local servers."""
