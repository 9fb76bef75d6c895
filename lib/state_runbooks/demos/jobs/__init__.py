"""Example job files for 08 check query change: a job's own Python file, as a team keeps it, with a
function that takes the SparkSession and returns the query (not started)."""
