"""The vocabulary every layer shares: errors, secret masking, models, durations and validation."""
