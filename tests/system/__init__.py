"""system tier."""
