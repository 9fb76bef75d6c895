"""What every layer uses: errors, formatting, redaction, Spark's names, the Java check."""
