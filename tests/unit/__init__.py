"""unit tier."""
