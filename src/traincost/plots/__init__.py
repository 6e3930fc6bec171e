"""Figures: one plotting function per figure, each reading a Parquet table."""
