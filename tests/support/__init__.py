"""support tier."""
