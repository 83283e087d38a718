"""The report pages a scored run writes: report.md and report.html with its explorer."""
