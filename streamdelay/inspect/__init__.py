"""Inspect and steer a running queue: list jobs page by page (``listing``), pause and resume
topics (``pausing``); see docs/operations.md#inspect-and-steer."""
