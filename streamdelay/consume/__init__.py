"""The worker side: Worker, delivery, upkeep loops, Dispatcher, supervision and backoff."""
