"""Data shipped with the judge package: the vendored POLLUX taxonomy and the sample data (see NOTICE.md)."""
