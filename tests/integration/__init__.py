"""integration tier."""
